"""The knowledge base: hardware documents, optimisation guides and exemplar kernels, in a chromadb store
under AGENTKERN_HOME/kb, retrieved for the planner's and coder's prompts.

- sources.py: what is indexed (markdown with front matter, kernels from kernels_dataset/, added exemplars)
- embedding.py: the built-in hashing embedding and the optional MiniLM one, registered with chromadb
- store.py: the index (rebuilt when its sources change) and queries with target/backend filters
- retrieve.py: the documents for a run's prompts; ingest.py: `kb add`; cli.py: `agentkern kb`

Importing this package does not import chromadb: a run with the built-in policy never needs it.
"""
