"""Search over candidates: the quality-diversity population and the stop rule's metrics."""
