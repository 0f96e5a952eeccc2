"""The graph family: a model no single template computes is traced to core ATen ops (graph_trace.py), rendered
op by op over C++ kernels (graph_render.py, kernels_dataset/templates/graph/), and matches the reference.

The rendered files are agentkern's own output here, so they run in this process (the harness tests judge
them in the sandbox: tests/harness/test_builtin.py)."""

import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from agentkern.policies.builtin import templates  # noqa: E402
from agentkern.policies.builtin.graph_trace import trace_graph  # noqa: E402
from agentkern.policies.builtin.ir import Unsupported  # noqa: E402

nn = torch.nn
F = torch.nn.functional

# (name, Model source, get_inputs source): the classes the issue names, each a graph no family covers.
CASES = [
    (  # parameters read by attribute path each call: numeric names (Sequential) and a keyword ("class") too
        "parameters_by_path",
        "self.layers = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()); self.register_buffer('shift', torch.randn(4, 1, 1));"
        " self.head = nn.ModuleDict({'class': nn.Linear(6, 3)})",
        "self.head['class'](self.layers(x) + self.shift)",
        "[torch.randn(2, 3, 8, 8)]",
    ),
    (
        "conv_bn_relu_pool",
        "self.c = nn.Conv2d(3, 8, 3, padding=1); self.bn = nn.BatchNorm2d(8)",
        "F.max_pool2d(torch.relu(self.bn(self.c(x))), 2)",
        "[torch.randn(2, 3, 12, 10)]",
    ),
    (
        "conv_transpose_strided_grouped",
        "self.c = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2)",
        "self.c(x)",
        "[torch.randn(2, 4, 5, 7)]",
    ),
    (
        "conv1d_dilated",
        "self.c = nn.Conv1d(4, 5, 3, stride=2, dilation=2, padding=2)",
        "self.c(x)",
        "[torch.randn(3, 4, 20)]",
    ),
    (
        "conv3d_depthwise",
        "self.c = nn.Conv3d(4, 4, 3, groups=4, padding=1)",
        "self.c(x)",
        "[torch.randn(1, 4, 5, 6, 7)]",
    ),
    # A row reduction's result read beside the rows it reduced: the group run over each row as it is reduced
    # (reduce_rows_then), with a weight over the rows, a row of zeros (0 / 0), several outer dims.
    (
        "row_norm_then_divide",
        "self.w = nn.Parameter(torch.randn(37))",
        "x / torch.norm(x, p=2, dim=-1, keepdim=True) * self.w",
        "[torch.cat([torch.randn(14, 37), torch.zeros(1, 37)]).view(3, 5, 37)]",
    ),
    ("row_max_then_exp", "pass", "torch.exp(x - x.amax(-1, keepdim=True))", "[torch.randn(6, 50) * 10]"),
    # two reductions: the mean moves to the group, the sum of |x| is computed with |x| (fused_<k>_sum_rows)
    (
        "row_mean_and_l1",
        "pass",
        "(x - x.mean(-1, keepdim=True)) / x.abs().sum(-1, keepdim=True) + x.amin(-1, keepdim=True)",
        "[torch.randn(9, 70)]",
    ),
    # the same group where the rows cannot be finished as reduced, computed after the reduction instead: a dim
    # other than the last; one row longer than the threads' split (rows cut among them); the result read again
    ("row_norm_not_last_dim", "pass", "x / x.norm(dim=1, keepdim=True)", "[torch.randn(4, 30, 6)]"),
    ("row_sum_one_long_row", "pass", "x - x.sum(-1, keepdim=True) / 7.0", "[torch.randn(1, 70000)]"),
    # the result without keepdim, broadcast along the rows (row r reads all of it), not one value a row
    # norms over middle dims, read in place (reduce_mid_f32): the 2-norm, the 1-norm, over two dims; p = 3 is not
    (
        "norm_middle_dims",
        "pass",
        "torch.cat([x.norm(dim=1).flatten(), x.norm(p=1, dim=1).flatten(), x.norm(p=3, dim=1).flatten(),"
        " torch.linalg.vector_norm(x, dim=(1, 2)).flatten()])",
        "[torch.randn(3, 20, 5, 7)]",
    ),
    ("row_norm_broadcast_along_rows", "pass", "x / x.norm(dim=-1)", "[torch.randn(40, 40)]"),
    # the sum of |x| is computed with |x| (fused_<k>_sum_rows), where it is: not moved to the group
    ("l1_norm_rows", "pass", "x / x.abs().sum(-1, keepdim=True)", "[torch.randn(8, 90)]"),
    # a vector's sum read alone: the group's output is the sum's shape, not the rows'
    ("row_sum_of_a_vector", "pass", "torch.sigmoid(x.sum(-1)) * 2", "[torch.randn(50)]"),
    ("row_mean_returned_too", "pass", "(x - (m := x.mean(-1, keepdim=True)), m)", "[torch.randn(5, 40)]"),
    ("sum_middle_dim", "pass", "x.sum(dim=1)", "[torch.randn(4, 6, 5)]"),
    # long columns summed (and averaged) in double: 300000 float32 adds of 0.1 drift far past 1e-4 relative
    (
        "column_sums_long",
        "pass",
        "torch.cat([x.sum(0), x.mean(0)])",
        "[torch.full((300000, 17), 0.1) + torch.rand(300000, 17) * 1e-3]",
    ),
    ("max_middle_keepdim", "pass", "torch.max(x, dim=1, keepdim=True)[0]", "[torch.randn(4, 6, 5)]"),
    ("argmin_dim", "pass", "torch.argmin(x, dim=2)", "[torch.randn(4, 6, 5)]"),
    (  # values and indices both read (with only the values read, the indices are not computed)
        "min_dim_values_times_indices",
        "pass",
        "(lambda r: r.values * r.indices)(torch.min(x, dim=2)) + torch.min(x, dim=1).values.sum()",
        "[torch.randn(4, 6, 5)]",
    ),
    ("softmax_dim1_of_3d", "pass", "torch.softmax(x, dim=1)", "[torch.randn(4, 6, 5)]"),
    # softmax over a middle axis read in place (kernels.cpp.j2 softmax_mid): whole blocks of columns and a
    # masked tail (150 = 2 x 64 + 22 at 16 lanes), a NaN column, a column all -inf, one holding +inf; log-softmax
    # over channels of a 5-D tensor.
    (
        "softmax_middle_axis_special_values",
        "pass",
        "torch.cat([torch.softmax(x * 1.0, dim=1), torch.log_softmax(x * 2.0, dim=1)])",
        "[torch.randn(3, 7, 150).index_put_((torch.tensor([0, 1, 1, 2]), torch.tensor([2, 0, 3, 5]),"
        " torch.tensor([9, 140, 140, 70])), torch.tensor([float('nan'), float('inf'), -float('inf'), 50.0]))"
        ".index_fill_(2, torch.tensor([17]), -float('inf'))]",
    ),
    ("log_softmax_channels_5d", "pass", "torch.log_softmax(x, dim=1) + x", "[torch.randn(2, 5, 3, 4, 9)]"),
    ("swish_written_out", "pass", "x * torch.sigmoid(x)", "[torch.randn(64, 33)]"),
    # returned outputs past the private caches, stored past them (ew.cpp.j2 ew_run): one whole run with a masked
    # tail, and runs of 1001 (most starting off a vector's alignment: stored plainly) from a strided operand
    (
        "streamed_final_outputs",
        "pass",
        "(torch.sigmoid(x) * 2.0, x[:, :1001] * y)",
        "[torch.randn(600, 1003), torch.randn(1001)]",
    ),
    ("batch_norm_streamed", "self.bn = nn.BatchNorm2d(8)", "self.bn(x)", "[torch.randn(16, 8, 64, 64)]"),
    (  # over the rows it is the GEMM template's row operation; over the columns, a graph
        "gemm_gelu_softmax_columns",
        "self.l = nn.Linear(16, 12)",
        "torch.softmax(F.gelu(self.l(x)), dim=0)",
        "[torch.randn(8, 16)]",
    ),
    (
        "gemm_scaled_added_to_itself",
        "self.l = nn.Linear(16, 12)",
        "(lambda y: y * 0.5 + y)(self.l(x))",
        "[torch.randn(8, 16)]",
    ),
    (
        "bias_per_channel",
        "self.c = nn.Conv2d(3, 4, 3); self.b = nn.Parameter(torch.randn(4, 1, 1))",
        "torch.tanh(self.c(x) + self.b)",
        "[torch.randn(2, 3, 9, 9)]",
    ),
    (
        "avg_pool_padded",
        "pass",
        "F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)",
        "[torch.randn(2, 3, 9, 8)]",
    ),
    (  # rows longer than a block of the running sums (2048), padded windows counted with the padding
        "avg_pool1d_long_rows",
        "pass",
        "F.avg_pool1d(x, 8, 1, 4) * 2",
        "[torch.randn(2, 3, 4500)]",
    ),
    (  # windows that do not overlap (stride 5 = the kernel), cut at the edge by ceil mode, counted without padding
        "avg_pool2d_strided_ceil",
        "pass",
        "F.avg_pool2d(x, 5, ceil_mode=True, padding=2, count_include_pad=False)",
        "[torch.randn(2, 3, 23, 31)]",
    ),
    ("avg_pool3d_divisor", "pass", "F.avg_pool3d(x, 3, 2, 1, divisor_override=5)", "[torch.randn(2, 2, 7, 9, 11)]"),
    (  # a long dilated 1-D row padded at both ends, its values and its indices (the first largest of each window)
        "max_pool1d_long_rows_dilated",
        "pass",
        "F.max_pool1d(x, 8, 1, 4, 3) + F.max_pool1d(x, 8, 1, 4, 3, return_indices=True)[1].float()",
        "[torch.randn(2, 3, 4500)]",
    ),
    ("layer_norm_2d", "self.n = nn.LayerNorm([6, 5])", "self.n(x)", "[torch.randn(3, 6, 5)]"),
    (  # rows of several 4096-value blocks with a vector tail, far from 0, with affine weights
        "layer_norm_long_offset",
        "self.n = nn.LayerNorm(5001); nn.init.uniform_(self.n.weight, 0.5, 2); nn.init.uniform_(self.n.bias, -1, 1)",
        "self.n(x)",
        "[torch.randn(3, 5001) * 2 + 20]",
    ),
    ("group_norm", "self.n = nn.GroupNorm(2, 6)", "self.n(x)", "[torch.randn(3, 6, 4, 4)]"),
    ("instance_norm", "self.n = nn.InstanceNorm2d(3)", "self.n(x)", "[torch.randn(2, 3, 5, 5)]"),
    (  # groups of several 4096-value blocks with vector tails, far from 0, with affine weights
        "group_norm_long_offset",
        "self.n = nn.GroupNorm(4, 12); nn.init.uniform_(self.n.weight, 0.5, 2); nn.init.uniform_(self.n.bias, -1, 1)",
        "self.n(x)",
        "[torch.randn(2, 12, 45, 41) * 3 + 50]",
    ),
    ("cumsum_reverse", "pass", "torch.cumsum(x.flip(1), dim=1).flip(1)", "[torch.randn(4, 9)]"),
    ("cumprod", "pass", "torch.cumprod(x, dim=1)", "[torch.rand(4, 9) + 0.5]"),
    ("cross_entropy", "pass", "F.cross_entropy(x, y)", "[torch.randn(8, 5), torch.randint(0, 5, (8,))]"),
    ("huber", "pass", "F.smooth_l1_loss(x, y)", "[torch.randn(8, 5), torch.randn(8, 5)]"),
    (
        "kl_div",
        "pass",
        "F.kl_div(torch.log(x), y, reduction='batchmean')",
        "[torch.softmax(torch.randn(8, 5), -1), torch.softmax(torch.randn(8, 5), -1)]",
    ),
    (
        "cosine_loss",
        "pass",
        "torch.mean(1 - F.cosine_similarity(x, y, dim=1))",
        "[torch.randn(8, 5), torch.randn(8, 5)]",
    ),
    (
        "triplet_margin",
        "self.f = nn.TripletMarginLoss(margin=1.0)",
        "self.f(x, y, z)",
        "[torch.randn(8, 5), torch.randn(8, 5), torch.randn(8, 5)]",
    ),
    (
        "activations",
        "pass",
        "F.hardsigmoid(x) + F.selu(x) + F.softplus(x) + F.softsign(x) + F.elu(x) + F.hardtanh(x)",
        "[torch.randn(7, 9)]",
    ),
    (  # float32 sum/mean/max/min over adjacent dims: read in place (the middle, the last, the first, all)
        "reductions_in_place",
        "pass",
        "torch.amax(x, dim=(1, 2)) + x.mean(-1).sum(-1) + torch.amin(x, 0).sum(-1)[:5] + x.sum(1).mean(-1) + x.sum()",
        "[torch.randn(5, 33, 70)]",
    ),
    (  # max pooling's windows cut by padding and spread by dilation, and its indices (the first largest)
        "max_pool_padded_dilated_indices",
        "pass",
        "F.max_pool2d(x, 3, 2, 1, return_indices=True)[1].float()[..., :4, :4] + F.max_pool2d(x, 2, 1, 0, 2)[..., :4, :4]",
        "[torch.randn(2, 3, 9, 9)]",
    ),
    (  # a stride neither 1 nor 2 (the pooling kernel's general path), ceil mode, 3-D; values and indices
        "max_pool3d_stride3_ceil",
        "pass",
        "F.max_pool3d(x, 2, 3, ceil_mode=True) + F.max_pool3d(x, 2, 3, ceil_mode=True, return_indices=True)[1].float()",
        "[torch.randn(2, 3, 7, 8, 10)]",
    ),
    (  # a norm whose statistics the graph reads too (they are skipped only when nothing does)
        "layer_norm_stats_read",
        "pass",
        "(lambda o: o[0] * 2 + o[1] + o[2])(torch.native_layer_norm(x, [9], None, None, 1e-5))",
        "[torch.randn(6, 9)]",
    ),
    (  # long rows at unit stride (pool.cpp.j2 max_pool_plane_separable's vectors at stride 1): many vectors, a
        # tail, both ends padded, NaNs, dilation along the rows, 3-D with strides across them
        "max_pool_unit_stride_rows",
        "pass",
        "(F.max_pool2d(torch.where(x > 2.0, torch.full_like(x, float('nan')), x), 3, 1, 1),"
        " F.max_pool3d(y, (2, 3, 5), (2, 2, 1), (1, 1, 2), dilation=(1, 1, 2)))",
        "[torch.randn(1, 2, 3, 4200), torch.randn(1, 1, 3, 2, 4150)]",
    ),
    (  # max pooling without indices, separably (pool.cpp.j2 max_pool_plane_separable): the window's rows maxed
        # first, then its taps along W at stride 2 (vectors of even lanes), 1 (short rows) and 3; padding,
        # dilation, ceil mode (windows past the edge), NaNs
        "max_pool_separable",
        "pass",
        "(F.max_pool3d(torch.where(x > 2.0, torch.full_like(x, float('nan')), x), (2, 3, 3), 2, 1, dilation=(1, 2, 2),"
        " ceil_mode=True), F.max_pool2d(y, (2, 4), 1, (1, 2), dilation=(1, 3)), F.max_pool2d(y, 3, 3, 1, ceil_mode=True),"
        " F.max_pool1d(z, 3, 2, 1, 2, ceil_mode=True))",
        # widths whose vector part ends where the last output reading only inside the row is (at both widths)
        "[torch.randn(2, 3, 5, 9, 66), torch.randn(2, 3, 6, 21), torch.randn(2, 4, 98)]",
    ),
    (  # NaNs in the windows: a NaN wins its window, as in torch (the pooling kernel's vector path)
        "max_pool_nan",
        "pass",
        "F.max_pool2d(torch.where(x > 1.5, torch.full_like(x, float('nan')), x), 2).nan_to_num(nan=123.0)",
        "[torch.randn(2, 4, 16, 16)]",
    ),
    (
        "conv_grouped_strided",
        "self.c = nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)",
        "self.c(x)",
        "[torch.randn(2, 4, 11, 9)]",
    ),
    ("bmm", "pass", "torch.bmm(x, y)", "[torch.randn(3, 4, 5), torch.randn(3, 5, 6)]"),
    # matrix-vector products (one column: gemm_vector), plain, batched, and a one-output linear layer (B^T, bias)
    ("mm_vector", "pass", "torch.mm(x, y) * 3", "[torch.randn(70, 45), torch.randn(45, 1)]"),
    ("bmm_vector", "pass", "torch.bmm(x, y)", "[torch.randn(3, 20, 37), torch.randn(3, 37, 1)]"),
    ("linear_one_output", "self.l = nn.Linear(37, 1)", "self.l(x) * 2", "[torch.randn(50, 37)]"),
    # A GEMM's output summed (or averaged) over its columns through scalings, as a matrix-vector product with
    # the column sums (graph_rewrite.py): a weight transposed in forward (keepdim), a linear layer (its bias
    # summed too; not keepdim), a mean, a product of two inputs; one whose columns are read elsewhere is not.
    (
        "gemm_columns_summed",
        "self.w = nn.Parameter(torch.randn(40, 33))",
        "torch.sum(torch.matmul(x, self.w.T) / 2, dim=1, keepdim=True) * 1.5",
        "[torch.rand(17, 33)]",
    ),
    ("linear_columns_summed", "self.l = nn.Linear(33, 40)", "self.l(x).sum(-1) * 0.5", "[torch.randn(17, 33)]"),
    (
        "linear_columns_averaged",
        "self.l = nn.Linear(33, 40)",
        "-self.l(x).mean(1, keepdim=True)",
        "[torch.randn(9, 33)]",
    ),
    ("mm_columns_summed", "pass", "(x @ y).sum(1)", "[torch.randn(9, 30), torch.randn(30, 21)]"),
    (
        "mm_columns_summed_and_read",
        "pass",
        "(lambda p: p.sum(1, keepdim=True) + p)(x @ y)",
        "[torch.randn(9, 30), torch.randn(30, 21)]",
    ),
    # B read transposed in place (a linear layer's weight, x @ y^T): the 8 x 8 register transposes and their
    # tails (K = 37 or 24, N = 70 or 40: not whole 8 x 8 blocks or 32-column panels; M = 19: a short row panel)
    ("linear_weight_in_place", "self.l = nn.Linear(37, 70)", "self.l(x)", "[torch.randn(19, 37)]"),
    ("bmm_transposed", "pass", "torch.bmm(x, y.transpose(1, 2))", "[torch.randn(2, 17, 24), torch.randn(2, 40, 24)]"),
    ("matvec", "pass", "torch.matmul(x, y)", "[torch.randn(7, 9), torch.randn(9, 1)]"),
    # Few rows (gemm_few_rows: B's panels packed one at a time by the thread that owns them) over three K
    # blocks of the default 256, a batch of them, and many rows (B packed whole first, row blocks as jobs)
    ("linear_few_rows_deep", "self.l = nn.Linear(600, 50)", "self.l(x)", "[torch.randn(9, 600)]"),
    ("bmm_few_rows_deep", "pass", "torch.bmm(x, y)", "[torch.randn(3, 5, 520), torch.randn(3, 520, 67)]"),
    ("mm_many_rows", "pass", "torch.mm(x, y)", "[torch.randn(401, 300), torch.randn(300, 70)]"),
    # Fused elementwise groups (graph_fuse.py): a conv's chain with a per-channel parameter (vector body), ops
    # with no vector form or results of other dtypes (the double body, each result rounded to its dtype), a
    # leaf strided inside the run (the vector walker declines), more leaves than one kernel reads (split),
    # batch norm in inference alone (a group whose root is a tuple) and without affine parameters.
    (
        "conv_relu_bias_add",
        "self.c = nn.Conv2d(3, 16, 3); self.b = nn.Parameter(torch.randn(16, 1, 1))",
        "torch.relu(self.c(x)) + self.b",
        "[torch.randn(2, 3, 20, 18)]",
    ),
    (
        "conv_sub_tanh_sub_mish",
        "self.c = nn.Conv2d(4, 6, 3, padding=1)",
        "F.mish(torch.tanh(self.c(x) - 0.5) - 0.2) * 1.5",
        "[torch.randn(2, 4, 9, 13)]",
    ),
    ("where_of_a_comparison", "pass", "torch.where(x > 0.3, x * 2.0, torch.exp(-x)) + 1", "[torch.randn(6, 50)]"),
    # Chains of views as one as_strided each (graph_render.view_chains): from an input and from a parameter,
    # through select, slices, squeeze, transpose; a view read twice ends a chain; a returned group reads an
    # expanded (stride 0) chain of an unfolded product
    (
        "view_chains",
        "self.w = nn.Parameter(torch.randn(70))",
        "(lambda a, b: ((lambda r: r.unfold(2, 2, 1).expand(4, 2, 3, 2, 2) * 1.5)(torch.bmm(a, b)), a.mean()))("
        "x.view(2, 3, 4, 5).permute(0, 2, 1, 3).select(1, 2), "
        "self.w.view(2, 5, 7).transpose(1, 2).unsqueeze(0).squeeze(0)[:, 1:6, :].narrow(2, 0, 3))",
        "[torch.randn(24, 5)]",
    ),
    ("strided_leaf", "pass", "torch.sigmoid(x.transpose(0, 1) + y) * 3.0", "[torch.randn(40, 7), torch.randn(7, 40)]"),
    (
        "eleven_leaves",
        "self.p = nn.ParameterList([nn.Parameter(torch.randn(37)) for _ in range(10)])",
        "torch.relu(x + self.p[0] + self.p[1] + self.p[2] + self.p[3] + self.p[4] + self.p[5] + self.p[6] + self.p[7]"
        " + self.p[8] + self.p[9] + y)",
        "[torch.randn(5, 37), torch.randn(5, 37)]",
    ),
    (
        "batch_norm_eval_alone",
        "self.bn = nn.BatchNorm2d(5); self.bn.running_mean.uniform_(-1, 1); self.bn.running_var.uniform_(0.5, 2)",
        "self.bn(x)",
        "[torch.randn(3, 5, 7, 40)]",
    ),
    (
        "batch_norm1d_no_affine_scaled",
        "self.bn = nn.BatchNorm1d(6, affine=False); self.bn.running_mean.uniform_(-1, 1)",
        "torch.sigmoid(self.bn(x) * 2.0)",
        "[torch.randn(4, 6, 33)]",
    ),
    # A convolution finishing its fused group in place (an epilogue): a full-shape leaf read alongside (in
    # place, stride 1 along W) and a grouped, strided one with batch norm (packed); where the layout does not
    # allow it the group runs after (a leaf transposed over the positions; a result bigger than the
    # convolution's); a convolution also read outside the group keeps its output.
    (
        "conv_epilogue_full_leaf",
        "self.c = nn.Conv2d(3, 16, 3, padding=1)",
        "torch.sigmoid(self.c(x) * 0.5 + y)",
        "[torch.randn(2, 3, 10, 37), torch.randn(2, 16, 10, 37)]",
    ),
    (
        "conv_epilogue_grouped_strided_bn",
        "self.c = nn.Conv2d(4, 6, 3, stride=2, groups=2); self.bn = nn.BatchNorm2d(6); self.bn.running_var.uniform_(0.5, 2)",
        "F.hardswish(self.bn(self.c(x)))",
        "[torch.randn(3, 4, 19, 40)]",
    ),
    (
        "conv_epilogue_transposed_leaf",
        "self.c = nn.Conv2d(3, 5, 3, padding=1)",
        "torch.relu(self.c(x) + y.transpose(2, 3))",
        "[torch.randn(2, 3, 12, 12), torch.randn(2, 5, 12, 12)]",
    ),
    (
        "conv_epilogue_bigger_result",
        "self.c = nn.Conv2d(3, 5, 3, padding=1)",
        "torch.tanh(self.c(x) + y)",
        "[torch.randn(2, 3, 8, 20), torch.randn(3, 2, 5, 8, 20)]",
    ),
    (
        "conv_also_read_outside",
        "self.c = nn.Conv2d(3, 5, 3)",
        "(lambda c: torch.relu(c) * 2.0 + c.mean())(self.c(x))",
        "[torch.randn(2, 3, 9, 30)]",
    ),
    # Transposed convolutions as the implicit GEMM over the spread-out input: 3-D, strided, with output
    # padding and an epilogue (batch norm, hardswish); 1-D with more padding than the kernel reaches (the
    # spread input cut, not framed).
    (
        "conv_transpose3d_epilogue_bn",
        "self.c = nn.ConvTranspose3d(3, 4, 3, stride=2, padding=1, output_padding=1); self.bn = nn.BatchNorm3d(4);"
        " self.bn.running_mean.uniform_(-1, 1)",
        "F.hardswish(self.bn(self.c(x)) - 0.25)",
        "[torch.randn(2, 3, 4, 5, 6)]",
    ),
    (
        # stride 5 over a 3-tap kernel: phases no tap reaches (the bias alone); stride 2 and dilation 2: taps
        # that reach every other phase only; the ReLU finished on the interleaved planes
        "conv_transpose_phases_dilated",
        "self.c = nn.ConvTranspose2d(4, 6, 3, stride=(5, 2), padding=(1, 3), dilation=2, groups=2)",
        "torch.relu(self.c(x))",
        "[torch.randn(2, 4, 5, 7)]",
    ),
    (
        # padding past the kernel's reach: its one phase starts inside x (a negative padding)
        "conv_transpose1d_cropped",
        "self.c = nn.ConvTranspose1d(3, 5, 3, padding=3, dilation=1)",
        "self.c(x)",
        "[torch.randn(2, 3, 11)]",
    ),
    (
        # one input channel a group (the depthwise kernel): two output channels each, padded, dilated, rows of
        # 4 vectors, one vector and a masked tail at both widths; the ReLU finished per plane
        "depthwise_multiplier_padded",
        "self.c = nn.Conv2d(3, 6, (3, 4), padding=(2, 1), dilation=(1, 2), groups=3)",
        "torch.relu(self.c(x))",
        "[torch.randn(2, 3, 6, 90)]",
    ),
    (
        # a depthwise transposed convolution: its stride phases run the depthwise kernel, starting inside x
        "depthwise_transposed_strided",
        "self.c = nn.ConvTranspose3d(4, 4, (2, 3, 3), stride=(1, 2, 3), padding=(1, 1, 2), groups=4, bias=False)",
        "self.c(x)",
        "[torch.randn(2, 4, 3, 5, 21)]",
    ),
    (
        # the implicit GEMM's direct panels (read from the framed input in place of packing), rows over a panel wide
        "conv_wide_rows_direct",
        "self.c = nn.Conv2d(5, 7, 3, padding=1)",
        "self.c(x)",
        "[torch.randn(2, 5, 4, 40)]",
    ),
    (
        # a last row panel of GMR_SHORT rows or fewer computed as such (gemm.cpp.j2 g_accumulate<MR>): 10 output
        # channels are panels of 6 and 4 (AVX2) or 8 and 2 (AVX-512); bias, direct panels, an epilogue
        "conv_short_last_panel",
        "self.c = nn.Conv2d(3, 10, 3, padding=1)",
        "torch.tanh(self.c(x))",
        "[torch.randn(2, 3, 5, 40)]",
    ),
    (
        # a stride-1 transposed convolution whose virtual rows save 15% of the panels at AVX2's 16 columns (66
        # outputs a row of 68): virtual tiles of 16 channels with a bias, the last panel short (6, 6, 4 with AVX2)
        "conv_transpose_virtual_short_panel",
        "self.c = nn.ConvTranspose2d(4, 16, 3)",
        "self.c(x) * 2",
        "[torch.randn(2, 4, 6, 64)]",
    ),
    (
        # rows sharing their zeros (conv.cpp.j2 Framed::Ws): padded along W only, so a row's reads past its end
        # land in the next row's leading zeros (no frame rows along H between them), and the last row's in the
        # copy's tail; virtual panels over a pitch of W + 2 = OW, one of them a plane's last short
        "conv_rows_share_zeros",
        "self.c = nn.Conv2d(4, 8, 3, padding=(0, 2))",
        "self.c(x) + 1",
        "[torch.randn(2, 4, 6, 10)]",
    ),
    (
        # padding past the kernel's reach (1 x 1 taps, padding 2): OW = W + 4 exceeds W + max(L, R) = W + 2, so
        # the shared pitch is OW (virtual positions distinct); a stride-1 transposed convolution's pitch, OW
        "conv_padding_past_the_taps",
        "self.c = nn.Conv2d(5, 6, 1, padding=2); self.t = nn.ConvTranspose2d(6, 7, (2, 5))",
        "self.t(self.c(x))",
        "[torch.randn(2, 5, 7, 9)]",
    ),
    (
        # an addmm's bias as one row that the GEMM starts C from (gemm.cpp.j2 crow): [N] and [1, N], beta 0.5
        # and 0 (a NaN bias then ignored, as torch's), the few-rows and blocked paths; the paths reading C
        # itself (a linear layer on 5 rows: dot products; one output column: matrix-vector) fill C from it
        "addmm_bias_rows",
        "self.l = nn.Linear(29, 45); self.v = nn.Linear(29, 1)",
        "torch.cat([torch.addmm(z, x[:37], y, beta=0.5, alpha=2.0).flatten(), torch.addmm(z[None], x, y).flatten(),"
        " self.l(x[:5]).flatten(), self.v(x).flatten(), torch.addmm(z * float('nan'), x[:37], y, beta=0.0).flatten()])",
        "[torch.randn(400, 29), torch.randn(29, 45), torch.randn(45)]",
    ),
    (
        # a GroupNorm of one value a channel (after a linear layer: norm.cpp.j2's S == 1 path), with and without
        # the affine part, groups of 5 channels (a vector's tail only) and of 24 (whole vectors and a tail)
        "group_norm_one_value_a_channel",
        "self.a = nn.GroupNorm(4, 20); self.b = nn.GroupNorm(2, 48, affine=False); nn.init.normal_(self.a.weight);"
        " nn.init.normal_(self.a.bias)",
        "self.a(x * 3 + 1).sum(1, keepdim=True) + self.b(torch.cat([x, x * x, -x[:, :8]], 1))",
        "[torch.randn(7, 20)]",
    ),
    (
        # triangular masks: triu / tril decompose into index grids (aranges, their difference, a comparison),
        # computed on the vector body from the aranges passed as float32; an arange as a factor too
        "triangular_masks",
        "pass",
        "torch.triu(x @ y, diagonal=1) + torch.tril(x, -2) * torch.arange(37)",
        "[torch.randn(37, 37), torch.randn(37, 37)]",
    ),
    (
        # narrow output rows (6 of a 32-column panel): panels over virtual positions oh * W + ow spanning rows,
        # read from x in place (the last ones copied, clipped at x's end), two K blocks (3 * 105 taps), ten output
        # channels (a partial row tile), the epilogue over each job's stretch of y
        "conv_narrow_rows_virtual",
        "self.c = nn.Conv3d(3, 10, (3, 5, 7))",
        "F.relu(self.c(x)) - 0.5",
        "[torch.randn(2, 3, 6, 9, 12)]",
    ),
    (
        # virtual positions over a padded copy, dilated along W; an output plane of 7 rows of 8 (14 of 12 columns)
        "conv_narrow_rows_virtual_padded",
        "self.c = nn.Conv2d(4, 9, 3, padding=(1, 2), dilation=(1, 2))",
        "torch.tanh(self.c(x)) * 2 + 1",
        "[torch.randn(3, 4, 7, 8)]",
    ),
    (
        # strides past the kernel's reach: phases no tap reaches are the bias, written by the interleave (whole
        # rows where the phase along H is tapless, single columns where only the one along W is), the epilogue after
        "conv_transpose_tapless_phases",
        "self.c = nn.ConvTranspose2d(3, 4, (2, 3), stride=(4, 5), padding=(1, 0), output_padding=(2, 3))",
        "torch.sigmoid(self.c(x)) * 3",
        "[torch.randn(2, 3, 5, 7)]",
    ),
    (
        # wide stride phases on direct panels, one of them starting inside x (its padding -1)
        "conv_transpose_wide_phases",
        "self.c = nn.ConvTranspose2d(3, 4, 5, stride=2, padding=4)",
        "self.c(x)",
        "[torch.randn(2, 3, 5, 40)]",
    ),
    (
        # a loss: its difference read by four members (one group), the group summed as it is computed (its mean
        # the only reader), the whole tensor cut among the threads, masked at the tail
        "loss_summed_in_one_pass",
        "pass",
        "F.smooth_l1_loss(x, y) + F.kl_div(torch.log(x.abs() + 1), y.abs(), reduction='batchmean')",
        "[torch.randn(300, 301), torch.randn(300, 301)]",
    ),
    (
        # a row sum of a group with a bool leaf (bytes); a mean over a leading dim, and a broadcast leaf: the
        # group stored, then reduced
        "group_sums_by_rows_and_not",
        "pass",
        "torch.sum(torch.where(z, (x - y) ** 2, x.abs()), dim=-1, keepdim=True) + "
        "torch.mean(F.silu(x) * y[0], dim=0).sum()",
        "[torch.randn(5, 37), torch.randn(5, 37), torch.randn(5, 37) > 0]",
    ),
    (
        "conv_transpose1d_cut",
        "self.c = nn.ConvTranspose1d(4, 6, 3, stride=3, padding=3, output_padding=2, groups=2)",
        "self.c(x)",
        "[torch.randn(2, 4, 12)]",
    ),
    # The vector bodies' math at special values (0, -0, +-inf, NaN, denormals, overflow, tiny arguments): mish,
    # softplus, log, log1p, selu (elu), hardswish, hardsigmoid, comparisons and where, tanh near 0.
    (
        "vector_math_special_values",
        "pass",
        "torch.stack([F.mish(x * 1.0), F.softplus(x * 2.0, beta=0.5, threshold=4.0), torch.log(x.abs() * 1.0),"
        " torch.log1p(x.abs() * 1.0), F.selu(x * 1.0), F.hardswish(x * 1.0), F.hardsigmoid(x * 1.0),"
        " torch.where(x * 1.0 > 0.5, x, -x) + (x <= 0.1) * 2.0, torch.tanh(x * 1e-5) * 1e5])",
        "[torch.cat([torch.tensor([0.0, -0.0, float('inf'), -float('inf'), float('nan'), 1e-40, -1e-40, 88.0, -120.0,"
        " 30.0, 1e-6, -1e-6]), torch.randn(500) * 6]).reshape(2, 256)]",
    ),
    # minimum / maximum (NaN from either side), fmin / fmax (NaN ignored), floor, ceil, trunc, round (ties to
    # even), sign, isinf and the logical ops on their vector bodies, at special values on both sides.
    (
        "vector_min_max_rounding_logical",
        "pass",
        "torch.stack([torch.minimum(x * 1.0, y), torch.maximum(x * 1.0, y), torch.fmin(x * 1.0, y),"
        " torch.fmax(x * 1.0, y), torch.floor(x * 2.0), torch.ceil(x * 2.0), torch.trunc(x * 2.0),"
        " torch.round(x * 2.0), torch.sign(x * 1.0), torch.isinf(x * 1.0).float(),"
        " torch.logical_not(x * 1.0).float(), torch.logical_and(x * 1.0, y).float(),"
        " torch.logical_or(x * 1.0, y).float(), torch.logical_xor(x * 1.0, y).float()])",
        "[torch.cat([torch.tensor([0.0, -0.0, float('inf'), -float('inf'), float('nan'), 0.25, 0.75, 1.25, -1.25,"
        " float('nan'), 2.0, -0.0]), torch.randn(500) * 3]).reshape(2, 256),"
        " torch.cat([torch.tensor([float('nan'), 0.0, 1.0, -float('inf'), 3.0, float('nan'), -0.0, 0.0, 0.0, 2.0,"
        " float('inf'), 0.0]), torch.randn(500) * 3]).reshape(2, 256)]",
    ),
    # Taps that read only the zeros framing x skipped (conv.cpp.j2 conv_tap_runs): a transposed 3-D convolution
    # at stride 1 (framed by K - 1 zeros a side) in several K blocks (40 channels x 27 taps), in place, with a
    # bias; dilated and padded along D and H (direct rows); strided along W (packed panels); narrow rows of a
    # padded 2-D convolution (virtual rows, a panel over several rows).
    (
        "conv_transpose3d_frame_taps",
        "self.c = nn.ConvTranspose3d(40, 8, 3)",
        "self.c(x)",
        "[torch.randn(1, 40, 4, 5, 6)]",
    ),
    (
        "conv3d_dilated_frame_taps",
        "self.c = nn.Conv3d(3, 9, 3, padding=2, dilation=(2, 2, 1))",
        "self.c(x)",
        "[torch.randn(2, 3, 5, 7, 40)]",
    ),
    (
        "conv3d_strided_w_frame_taps",
        "self.c = nn.Conv3d(3, 9, 3, stride=(1, 1, 2), padding=1)",
        "self.c(x)",
        "[torch.randn(2, 3, 4, 5, 40)]",
    ),
    (
        "conv2d_narrow_rows_frame_taps",
        "self.c = nn.Conv2d(4, 8, 5, padding=2)",
        "self.c(x)",
        "[torch.randn(2, 4, 12, 10)]",
    ),
    # A convolution's epilogue taking the minimum with a tensor made in forward (a lifted constant: KernelBench
    # level 2's 31, 83 and 93), then a channel bias and a scale.
    (
        "conv_min_constant_tensor_epilogue",
        "self.c = nn.Conv2d(4, 6, 3); self.b = nn.Parameter(torch.randn(6, 1, 1))",
        "(torch.min(self.c(x), torch.tensor(0.25)) + self.b) * 2.0",
        "[torch.randn(2, 4, 9, 11)]",
    ),
    # The implicit-GEMM convolution, rows of the padded input read in place (stride 1 along W) or packed
    # (conv_pack_b): K in several blocks (576 > the default 256), fewer output channels than a register tile's
    # rows, output positions not whole panels; strided, padded and dilated with rows of 70.
    ("conv_many_channels", "self.c = nn.Conv2d(64, 7, 3, padding=1)", "self.c(x)", "[torch.randn(2, 64, 9, 11)]"),
    (
        "conv_many_channels_strided",
        "self.c = nn.Conv2d(64, 9, 3, stride=2, padding=1)",
        "self.c(x)",
        "[torch.randn(2, 64, 11, 13)]",
    ),
    (
        "conv_strided_dilated",
        "self.c = nn.Conv2d(3, 10, (5, 3), stride=(2, 1), padding=(2, 1), dilation=(1, 2))",
        "self.c(x)",
        "[torch.randn(2, 3, 17, 70)]",
    ),
    # Few output positions an image, W at least four times the patches (conv.cpp.j2 conv3d_few_positions: the
    # patches as a linear layer's rows): a residual block's layer at 2 x 2 with batch norm, ReLU and the skip as
    # its epilogue (K in two blocks, an edge panel of 16 channels); 3-D strided, dilated and padded with a bias;
    # grouped; a transposed convolution's small phases; then the implicit GEMM again where the patches outweigh
    # W (fewer channels than four times the patches) or P is more than half a panel.
    (
        "conv_few_positions_residual_bn",
        "self.c = nn.Conv2d(48, 48, 3, padding=1, bias=False); self.bn = nn.BatchNorm2d(48)",
        "torch.relu(self.bn(self.c(x)) + x)",
        "[torch.randn(2, 48, 2, 2)]",
    ),
    (
        "conv_few_positions_3d_strided_dilated",
        "self.c = nn.Conv3d(6, 50, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1))",
        "self.c(x)",
        "[torch.randn(1, 6, 4, 3, 5)]",
    ),
    (
        "conv_few_positions_grouped",
        "self.c = nn.Conv2d(8, 160, 3, groups=2, padding=1)",
        "torch.sigmoid(self.c(x))",
        "[torch.randn(1, 8, 3, 3)]",
    ),
    (
        "conv_few_positions_transposed",
        "self.c = nn.ConvTranspose2d(16, 64, 3, stride=2)",
        "self.c(x) * 0.5",
        "[torch.randn(1, 16, 2, 2)]",
    ),
    (
        "conv_few_positions_many_patches",
        "self.c = nn.Conv2d(16, 24, 3, padding=1)",
        "torch.relu(self.c(x))",
        "[torch.randn(40, 16, 4, 4)]",
    ),
    ("conv_few_positions_wide_rows", "self.c = nn.Conv1d(8, 256, 3)", "self.c(x)", "[torch.randn(1, 8, 40)]"),
    # At most eight rows against a B given transposed (gemm.cpp.j2 gemm_dot_rows: dot products along K, B^T read
    # in place): K and N not whole vectors and blocks, one to eight rows, addmm's alpha and beta, a batch.
    ("linear_dot_rows", "self.l = nn.Linear(70, 45)", "torch.tanh(self.l(x))", "[torch.randn(3, 70)]"),
    ("linear_dot_one_row", "self.l = nn.Linear(100, 9)", "self.l(x)", "[torch.randn(1, 100)]"),
    (
        "linear_dot_eight_rows_scaled",
        "self.w = nn.Parameter(torch.randn(10, 33)); self.b = nn.Parameter(torch.randn(10))",
        "torch.addmm(self.b, x, self.w.t(), beta=0.5, alpha=2.0)",
        "[torch.randn(8, 33)]",
    ),
    ("bmm_dot_rows", "pass", "torch.bmm(x, y.transpose(1, 2))", "[torch.randn(3, 5, 40), torch.randn(3, 7, 40)]"),
    # A GEMM's fused group run over each block of its output as the kernel completes it (gemm.cpp.j2 g_finish),
    # on every path: row blocks (400 rows, K in two blocks), few rows (an edge panel), a batch (the leaf one
    # value a row, the same in every batch entry), a matrix-vector product; dot rows: linear_dot_rows above.
    (
        "gemm_epilogue_blocks",
        "self.l = nn.Linear(300, 200); self.s = nn.Parameter(torch.randn(200))",
        "torch.relu(self.l(x)) * self.s + y",
        "[torch.randn(400, 300), torch.randn(400, 1)]",
    ),
    ("gemm_epilogue_few_rows", "self.l = nn.Linear(70, 100)", "F.gelu(self.l(x)) - 0.5", "[torch.randn(50, 70)]"),
    (
        "bmm_epilogue",
        "pass",
        "torch.sigmoid(torch.bmm(x, y) * z)",
        "[torch.randn(3, 40, 50), torch.randn(3, 50, 60), torch.randn(40, 1)]",
    ),
    ("mm_vector_epilogue", "pass", "torch.tanh(torch.mm(x, y)) + 1.0", "[torch.randn(50, 30), torch.randn(30, 1)]"),
    # a linear layer on [B, T, C]: the GEMM of its [B T, C] view, its group reading the view back to [B, T, N]
    (
        "linear_3d_epilogue",
        "self.l = nn.Linear(32, 48)",
        "F.gelu(self.l(x)) + y",
        "[torch.randn(2, 5, 32), torch.randn(2, 5, 48)]",
    ),
    # batch norm + ReLU over planes of 3 x 3: runs of 9, shorter than two vectors, on the vector body with a tail
    (
        "bn_relu_small_planes",
        "self.bn = nn.BatchNorm2d(5); self.bn.running_mean.uniform_(-1, 1); self.bn.running_var.uniform_(0.5, 2)",
        "torch.relu(self.bn(x))",
        "[torch.randn(2, 5, 3, 3)]",
    ),
    # an operand transposed along the innermost dim (NetVLAD's `vlad.transpose(1, 2) - a`): gathered, runs of that
    # dim, with a tail; a bool operand strided there cannot be: the double body
    (
        "transposed_operand_gathered",
        "pass",
        "x.transpose(1, 2) * 2.0 - y",
        "[torch.randn(3, 21, 5), torch.randn(3, 1, 21)]",
    ),
    (
        "transposed_bool_operand",
        "pass",
        "torch.where(x.transpose(0, 1) > 0, y, 0.0)",
        "[torch.randn(6, 5), torch.randn(5, 6)]",
    ),
    # torch.cat by one kernel call: feature maps along the channels as DenseNet's (one a transposed view, copied
    # contiguous first; one of 0 channels), along the last dim; the pieces of unequal widths
    (
        "cat_pieces_channels",
        "pass",
        "torch.cat([y.transpose(2, 3), x, torch.relu(x) * 2.0, x[:, :0]], 1) + 1.0",
        "[torch.randn(2, 3, 4, 5), torch.randn(2, 2, 5, 4)]",
    ),
    ("cat_pieces_last_dim", "pass", "torch.cat([y, x, x * 3.0], -1)", "[torch.randn(3, 4, 5), torch.randn(3, 4, 2)]"),
    # the same cat at every step of a loop (one plan kept per layout), an empty 1-D piece skipped, and pieces of
    # two dtypes (a piece at a time)
    (
        "cat_pieces_steps_and_dtypes",
        "pass",
        "(lambda h: torch.cat([torch.cat([h, x.new_zeros(0)]), (x > 0).long().flatten()]))("
        "torch.cat([torch.tanh(torch.cat([torch.tanh(torch.cat([x, y], 1)), y], 1)), y], 1).flatten())",
        "[torch.randn(3, 4), torch.randn(3, 2)]",
    ),
    # windows of a dim as a view (Tensor.unfold: ViT's patches), copied by the reshape after it
    ("unfold_windows", "pass", "torch.tanh(x.unfold(2, 3, 2).reshape(2, 3, -1)) * 2.0", "[torch.randn(2, 3, 9, 5)]"),
    # a leaf that is not contiguous along the output's rows: the group's own pass after the GEMM
    # attention's scores: a [B H, T, T] bmm viewed as [B, H, T, T], scaled, a mask the same for every head added
    (
        "attention_scores_epilogue",
        "pass",
        "torch.softmax((x @ y.transpose(-2, -1)) * 0.5 + z, -1)",
        "[torch.randn(2, 3, 8, 6), torch.randn(2, 3, 8, 6), torch.randn(1, 1, 8, 8)]",
    ),
    # a leaf the same in every batch entry but not in every row: [B T] rows not one stride apart in it
    (
        "linear_3d_epilogue_leaf_per_position",
        "self.l = nn.Linear(32, 48)",
        "torch.relu(self.l(x)) * y",
        "[torch.randn(2, 5, 32), torch.randn(5, 48)]",
    ),
    (
        "gemm_epilogue_transposed_leaf",
        "pass",
        "torch.mm(x, y) * z.t()",
        "[torch.randn(20, 30), torch.randn(30, 40), torch.randn(40, 20)]",
    ),
    # The channel-vector convolution (conv.cpp.j2 conv3d_channel_vectors), where a GEMM panel would be mostly
    # unused: rows of 6 through a 3 x 7 kernel with its fused group finished on each job's rows; a transposed
    # convolution's stride-1 phase framed by 2 and 4 zeros (only x's own products computed), bias, epilogue.
    (
        "conv_channel_vectors_epilogue",
        "self.c = nn.Conv2d(4, 16, (3, 7)); self.b = nn.Parameter(torch.randn(16, 1, 1))",
        "torch.relu(self.c(x)) * 2.0 - self.b",
        "[torch.randn(2, 4, 9, 12)]",
    ),
    (
        "conv_channel_vectors_transposed",
        "self.c = nn.ConvTranspose2d(5, 16, (3, 5))",
        "torch.sigmoid(self.c(x))",
        "[torch.randn(2, 5, 6, 7)]",
    ),
    # pow with the exponents torch computes as products and roots (graph_fuse.POW_SCALAR: one multiply, a
    # vector form), at special values, and one it computes with pow (the double body); isnan's vector form.
    (
        "pow_special_exponents",
        "pass",
        "torch.stack([x ** 2, x ** 3, x.abs() ** 0.5, x.abs() ** -0.5, x ** -1, x ** -2, x ** 1.0, x ** 0,"
        " x.abs() ** 2.5, torch.where(torch.isnan(x * 1.0), torch.zeros_like(x), x * 2.0)])",
        "[torch.cat([torch.tensor([0.0, -0.0, float('inf'), -float('inf'), float('nan'), 1e-20, -3.0, 1e20]),"
        " torch.randn(248) * 3]).reshape(2, 128)]",
    ),
    # Whole-tensor reductions (one row, fewer than the threads: each row cut among them, over_rows) and a few
    # long rows: sum, mean, max with a NaN, 1- and 2-norms; the float32 sums' vector path (sum_rows_f32).
    (
        "whole_tensor_reductions_split",
        "pass",
        "torch.stack([x.sum(), x.mean(), torch.norm(x), torch.norm(x, p=1), torch.linalg.vector_norm(x, dim=(0, 1)),"
        " (x ** 2).mean(), torch.where(x > 4.2, torch.full_like(x, float('nan')), x).amax(), x.amin(),"
        " torch.norm(x.reshape(3, -1), dim=1).sum()])",
        "[torch.randn(301, 300) + 0.25]",
    ),
    (
        "frobenius_rms_normalised",
        "pass",
        "x / torch.norm(x, p='fro') + x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
        "[torch.randn(3, 5, 70, 71)]",
    ),
    # float32 scans eight rows at a time, 16 columns a step (300 = 18 x 16 + 12 left over), with rows left over
    # (19 = 2 x 8 + 3), and the reverse cumsum's flips
    (
        "cumsum_cumprod_row_blocks",
        "pass",
        "torch.cumsum(x, dim=1) + torch.cumprod(x * 0.1 + 1.0, dim=1) + torch.cumsum(x.flip(1), 1).flip(1)",
        "[torch.randn(19, 300)]",
    ),
    # scans of a slice's rows read in place (their stride is not their length): KernelBench's exclusive cumsum,
    # and a cumprod of columns 3 on, over row blocks and the rows left over
    (
        "scans_of_slices",
        "pass",
        "torch.cat((torch.zeros_like(x[:, :1]), torch.cumsum(x.narrow(1, 0, x.size(1) - 1), dim=1)), 1)"
        " + torch.cumprod(x[:, 3:] * 0.01 + 1.0, dim=1).sum() + torch.cumsum(x[:, 5:], -1).sum(1, keepdim=True)",
        "[torch.randn(19, 300)]",
    ),
    # argmax / argmin over a dim that is not the last, read in place 64 columns at a time (a tail of 6): ties
    # (the first index wins) and NaNs (the first NaN's index), as values and as max/min's indices
    (
        "arg_reductions_middle_dim",
        "pass",
        "(lambda r: torch.cat([torch.argmax(r, 1), torch.argmin(r, 1), torch.max(r, 1).indices, torch.argmin(r, 0)])"
        ".float())(torch.where(x > 2.2, torch.full_like(x, float('nan')), torch.round(x * 2.0)))",
        "[torch.randn(3, 7, 70)]",
    ),
    # bool leaves in the vector body (bytes read as 1.0 / 0.0): a full-shape mask with a 16-lane tail (70 wide),
    # one row of it broadcast along the rows, a 0-d one, and torch.where over a bool condition
    (
        "bool_leaves",
        "pass",
        "torch.cumsum(x * y, dim=1) + x * y[:1] + torch.where(y, x, -x) + x * z",
        "[torch.randn(9, 70), torch.randn(9, 70) > 0, torch.tensor(True)]",
    ),
    # a log-softmax picked at one index a row (graph_rewrite.py -> log_softmax_pick): a cross-entropy with an
    # ignored class, and picks from rows with a NaN row among them (NaN, as torch's); 70 classes: a vector tail
    (
        "cross_entropy_picks",
        "pass",
        "F.cross_entropy(x, y, ignore_index=3) + torch.log_softmax(z, -1).gather(-1, y[:, None]).sum(1)",
        "[torch.randn(37, 70) * 4, torch.randint(0, 70, (37,)),"
        " torch.randn(37, 70).index_fill(0, torch.tensor([5]), float('nan'))]",
    ),
    # triangles of products (graph_rewrite.py: the GEMM skips the tiles outside and writes zeros there): diagonals
    # on both sides, through the blocked GEMM (400 rows) and the few-rows one (100), a linear layer's (addmm, a
    # bias), one column (the matrix-vector path), a few rows of a transposed B (dot products); partial tiles
    (
        "triangles_of_products",
        "pass",
        "torch.triu(x @ y, diagonal=3) + torch.tril(x @ y, -5) * 2 + torch.triu(F.linear(x, z, y[0]), 2)"
        " + torch.tril(x @ y[:, :1], -2) + torch.tril(x[:7] @ z.T, 1).sum() + torch.triu(x[:100] @ y, -4).sum()",
        "[torch.randn(400, 37), torch.randn(37, 45), torch.randn(45, 37)]",
    ),
    # flips: the last axis of a contiguous tensor (rows read backwards, with a leading axis flipped as well),
    # and axes the general copy walks (a leading one alone; the last of a transposed view)
    (
        "flips",
        "pass",
        "torch.stack([x.flip(-1), x.flip((0, 2)), x.flip(0), x.transpose(1, 2).flip(-1).transpose(1, 2)]) * 2.0",
        "[torch.randn(3, 50, 50)]",
    ),
    # 2 x 2 max pooling's vector path: NaN in windows, odd widths (a tail), ceil mode (windows past the edge).
    (
        "max_pool_2x2_nan",
        "pass",
        "F.max_pool2d(x, 2) + F.max_pool2d(x, 2, ceil_mode=True)[..., :4, :20]",
        "[torch.randn(2, 3, 9, 41).masked_fill(torch.rand(2, 3, 9, 41) < 0.03, float('nan'))]",
    ),
]


def _module(tmp_path, name, init, forward, inputs):
    source = textwrap.dedent(
        f"""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                {init}

            def forward(self, x, *more):
                y, z = (list(more) + [None, None])[:2]
                return {forward}


        def get_inputs():
            return {inputs}


        def get_init_inputs():
            return []
        """
    )
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def _spec(path, module):
    from agentkern.policies.builtin.recognize import model_source

    torch.manual_seed(42)
    model = module.Model().eval()
    inputs = module.get_inputs()
    return (
        model,
        inputs,
        {
            "family": "graph",
            "dtype": "float32",
            "input_shapes": [list(t.shape) for t in inputs],
            "output_shape": None,
            "attrs": {"graph": trace_graph(model, inputs)},
            "epilogue": [],
            "model_source": model_source(path),
        },
    )


@pytest.mark.parametrize("name, init, forward, inputs", CASES, ids=[c[0] for c in CASES])
def test_a_graph_no_template_covers_is_rendered_and_computes_the_reference(tmp_path, name, init, forward, inputs):
    _renders_the_reference(tmp_path, name, init, forward, inputs, {})


# The cases whose kernels differ between the vector widths (vecmath.h.j2's two halves), at the AVX2 one too
# (the host's own width is the default above).
AVX2_CASES = [
    "depthwise_multiplier_padded",
    "bool_leaves",
    "pow_special_exponents",
    "whole_tensor_reductions_split",
    "vector_math_special_values",
    "vector_min_max_rounding_logical",
    "max_pool_2x2_nan",
    "layer_norm_long_offset",
    "conv_transpose3d_frame_taps",
    "conv_short_last_panel",
    "conv_transpose_virtual_short_panel",
    "conv_rows_share_zeros",
    "conv_padding_past_the_taps",
    "addmm_bias_rows",
    "group_norm_one_value_a_channel",
    "cross_entropy_picks",
    "triangles_of_products",
    "softmax_middle_axis_special_values",
    "streamed_final_outputs",
    "max_pool_unit_stride_rows",
    "max_pool_separable",
    "row_norm_then_divide",
    "conv_few_positions_residual_bn",
    "conv_few_positions_grouped",
    "linear_dot_rows",
    "bmm_dot_rows",
    "gemm_epilogue_blocks",
    "bmm_epilogue",
    "transposed_operand_gathered",
]


@pytest.mark.parametrize("name", AVX2_CASES)
def test_the_avx2_kernels_compute_the_reference(tmp_path, name):
    (case,) = [c for c in CASES if c[0] == name]
    _renders_the_reference(tmp_path, *case, {"simd": "avx2"})


def _solution(tmp_path, name, source):
    """The rendered kernel file `source` written as NAME_graph.py and imported."""
    rendered = tmp_path / f"{name}_graph.py"
    rendered.write_text(source)
    loaded = importlib.util.spec_from_file_location(f"{name}_graph", rendered)
    solution = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(solution)
    return solution


def _renders_the_reference(tmp_path, name, init, forward, inputs, params, patch=None):
    """`patch(source, module)`: called on the rendered file's source and module before the kernel is built."""
    path, module = _module(tmp_path, name, init, forward, inputs)
    model, example, spec = _spec(path, module)
    source = templates.render(spec, params, "cpp")
    solution = _solution(tmp_path, name, source)
    if patch is not None:
        patch(source, solution)
    torch.manual_seed(42)
    kernel = solution.ModelNew().eval()
    for trial in range(2):
        torch.manual_seed(100 + trial)
        args = module.get_inputs()  # fresh draws: nothing was specialised to the traced values
        with torch.no_grad():
            expected, got = model(*args), kernel(*args)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4, equal_nan=True)


def _no_second_pass(call):
    """A patch for _renders_the_reference: the forward has a call matching `call` (a regex: the helper's name,
    its opening arguments) with group 0 as its epilogue, and the group's own pass (_fused, the fallback) fails
    if called."""

    def patch(source, module):
        forward = source[source.index("def forward(self, *inputs)") :]
        assert re.search(rf"= _{call}.*epilogue=\(0, ", forward), forward

        def refused(*args, **kwargs):
            raise AssertionError("the group ran as a pass of its own")

        module._fused = refused

    return patch


@pytest.mark.parametrize("name", ["row_norm_then_divide", "row_max_then_exp", "row_mean_and_l1"])
def test_a_row_reductions_group_runs_over_each_row_as_it_is_reduced(tmp_path, name):
    # The two passes (the reduction, then the group by _fused) are the fallback: made to fail here, so these
    # cases, whose layouts allow it, must run the group in the reduction's row loop (reduce_rows_then).
    (case,) = [c for c in CASES if c[0] == name]
    _renders_the_reference(tmp_path, *case, {}, patch=_no_second_pass(r"(vector_norm|amax|mean)\(v\d+, "))


@pytest.mark.parametrize(
    "name", ["row_norm_then_divide", "row_max_then_exp", "row_mean_and_l1", "row_sum_one_long_row", "l1_norm_rows"]
)
def test_finishing_a_reductions_rows_as_they_are_reduced_changes_no_value(tmp_path, name):
    # the same rendered forward with the row loop (reduce_rows_then) and without it (the reduction, then the
    # group): bit for bit the same, as fusing promises; the long row is cut among the threads in both.
    (case,) = [c for c in CASES if c[0] == name]
    path, module = _module(tmp_path, *case)
    _, _, spec = _spec(path, module)
    solution = _solution(tmp_path, name, templates.render(spec, {}, "cpp"))
    kernel = solution.ModelNew().eval()
    torch.manual_seed(7)
    args = module.get_inputs()
    with torch.no_grad():
        rows = kernel(*args)
        solution._reduce_then = lambda *a, **k: None
        passes = kernel(*args)
    torch.testing.assert_close(rows, passes, rtol=0, atol=0, equal_nan=True)


GEMM_EPILOGUES = [
    "gemm_epilogue_blocks",
    "gemm_epilogue_few_rows",
    "bmm_epilogue",
    "mm_vector_epilogue",
    "linear_dot_rows",
    "linear_3d_epilogue",
    "attention_scores_epilogue",
]
GEMM_EPILOGUE_FALLBACKS = ["gemm_epilogue_transposed_leaf", "linear_3d_epilogue_leaf_per_position"]


@pytest.mark.parametrize("name", GEMM_EPILOGUES)
def test_a_gemms_group_runs_as_the_gemm_completes_its_blocks(tmp_path, name):
    # The group's own pass (_fused) is the fallback: made to fail, so these cases, whose layouts allow it, must
    # run the group inside the GEMM's kernel.
    (case,) = [c for c in CASES if c[0] == name]
    _renders_the_reference(tmp_path, *case, {}, patch=_no_second_pass(r"(addmm|mm|bmm)\("))


@pytest.mark.parametrize("name", GEMM_EPILOGUES + GEMM_EPILOGUE_FALLBACKS)
def test_finishing_a_gemms_blocks_changes_no_value(tmp_path, name):
    # the same forward with the group run inside the GEMM and as its own pass after it: bit for bit the same
    (case,) = [c for c in CASES if c[0] == name]
    path, module = _module(tmp_path, *case)
    _, _, spec = _spec(path, module)
    solution = _solution(tmp_path, name, templates.render(spec, {}, "cpp"))
    kernel = solution.ModelNew().eval()
    torch.manual_seed(7)
    args = module.get_inputs()
    passes = []
    real_fused = solution._fused
    solution._fused = lambda *a, **k: passes.append(1) or real_fused(*a, **k)
    with torch.no_grad():
        inside = kernel(*args)
        solution._epilogue_args = lambda *a, **k: None
        after = kernel(*args)
    # a layout the GEMM cannot finish falls back both times; the others ran their group inside the first time only
    assert len(passes) == (2 if name in GEMM_EPILOGUE_FALLBACKS else 1)
    torch.testing.assert_close(inside, after, rtol=0, atol=0, equal_nan=True)


def test_groups_of_the_same_ops_share_one_kernel_with_their_own_numbers(tmp_path):
    # two groups of the same ops (sigmoid, then a multiply by a number) on either side of a softmax: one C++
    # kernel (a recurrent network's step repeats its groups once a time step), each call with its own number
    forward = "torch.sigmoid(torch.softmax(torch.sigmoid(x) * 2.0, -1)) * 3.0"
    path, module = _module(tmp_path, "shared", "pass", forward, "[torch.randn(4, 33), torch.randn(4, 33)]")
    model, _, spec = _spec(path, module)
    source = templates.render(spec, {}, "cpp")
    calls = re.findall(r"_fused\((\d+), torch.float32, \[[^\]]*\], \[([^\]]*)\]", source)
    assert len(calls) == 2 and calls[0][0] == calls[1][0] and calls[0][1] != calls[1][1], calls
    assert len(re.findall(r'extern "C" int fused_\d+\(', source)) == 1
    solution = _solution(tmp_path, "shared", source)
    args = module.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(solution.ModelNew().eval()(*args), model(*args), rtol=1e-4, atol=1e-4)


def test_a_convolutions_blocks_are_split_statically_whatever_the_schedule_and_the_gemms_follow_it(tmp_path):
    # Static keeps each block of the output in the cache of the core that wrote it last call (conv.cpp.j2)
    init = "self.conv = nn.Conv2d(3, 8, 3); self.linear = nn.Linear(6, 5)"
    path, module = _module(tmp_path, "conv_linear", init, "self.linear(self.conv(x))", "[torch.randn(2, 3, 8, 8)]")
    _, _, spec = _spec(path, module)

    def pragma_before(source: str, loop: str) -> str:
        return re.search(r"#pragma omp for ([^\n]*)\n\s*" + re.escape(loop), source).group(1)

    for schedule in ("dynamic", "static"):
        source = templates.render(spec, {"simd": "avx2", "schedule": schedule, "gemm_kc": 256}, "cpp")
        # each thread's share of the jobs is fixed (thread_share, prefetch.h.j2), whatever the schedule
        job_loops = re.findall(r"\n([^\n]*)\n[^\n]*\n\s*for \(int64_t job = ([^;]*);", source)
        assert job_loops and all(start == "share.lo" for _, start in job_loops), job_loops
        assert "schedule" not in "".join(line for line, _ in job_loops)
        assert pragma_before(source, "for (int64_t ib = 0; ib < mblocks; ++ib)") == f"collapse(2) schedule({schedule})"


def test_a_matrix_vector_product_sums_in_double(tmp_path):
    # Rows whose products (~100 each, partial sums in the thousands) cancel to near zero: summed in float32 the
    # result is off by ~1e-4 absolute, in double by nothing a float32 result can show.
    path, module = _module(
        tmp_path, "mm_vector_cancelling", "pass", "torch.mm(x, y)", "[torch.randn(8, 4096), torch.randn(4096, 1)]"
    )
    _, _, spec = _spec(path, module)
    solution = _solution(tmp_path, "mm_vector_cancelling", templates.render(spec, {}, "cpp"))
    torch.manual_seed(7)
    x, y = torch.randn(8, 4096) * 100, torch.randn(4096, 1)
    x[:, -1] = (-(x[:, :-1].double() @ y[:-1].double()) / y[-1].double()).float().squeeze(1)
    exact = x.double() @ y.double()
    with torch.no_grad():
        got = solution.ModelNew().eval()(x, y)
    assert exact.abs().max() < 1.0  # near zero, as meant
    torch.testing.assert_close(got.double(), exact, rtol=0, atol=1e-6)


# A fused group's sum or mean over a run of middle dims, its values never stored (kernels.cpp.j2
# fused_<k>_sum_mid): RMSNorm's mean of x^2 over the channels; two middle dims kept, a bool leaf and a one-value
# leaf, 37 x 5 columns (64-column blocks, a masked vector tail); a sum over dim 1 of a 4-d group; each the value
# the group stored, then reduced, gives (reduce_mid_f32, double sums), the fallback refused.
SUM_MID_CASES = [
    (
        "rms_norm_mean_of_squares",
        "pass",
        "x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
        "[torch.rand(3, 16, 9, 70)]",
    ),
    (
        "sum_over_middle_dims_bool_scalar",
        "pass",
        "torch.mean(torch.where(z, x * y, -x) + y[1, 2, 3, 4, 0], dim=(1, 2), keepdim=True)"
        " + torch.sum((x - y) * 2.0, dim=1)",
        "[torch.randn(2, 4, 5, 37, 5), torch.randn(2, 4, 5, 37, 5), torch.randn(2, 4, 5, 37, 5) > 0]",
    ),
    (
        # leaves with one value a row (helpers _fused_sum's kind -1, -2 for bools): a logsumexp's max, a bool
        # mask a row, a value a batch entry over middle dims (fused_<k>_sum_mid's outer index), a scalar
        "sum_with_a_value_a_row",
        "pass",
        "torch.logsumexp(x.flatten(1), dim=1)[:, None, None] + torch.where(z, x, -x).sum((2, 3, 4))[:, :1, None]"
        " + (x * y.amax((1, 2, 3, 4), keepdim=True) - 0.5).sum((1, 2))",
        "[torch.randn(3, 4, 5, 37, 5), torch.randn(3, 4, 5, 37, 5), torch.randn(3, 4, 1, 1, 1) > 0]",
    ),
]


@pytest.mark.parametrize("name, init, forward, inputs", SUM_MID_CASES, ids=[c[0] for c in SUM_MID_CASES])
@pytest.mark.parametrize("simd", ["host", "avx2"])
def test_a_groups_sum_over_middle_dims_never_stores_the_group(tmp_path, name, init, forward, inputs, simd):
    def patch(source, module):
        assert "_fused_sum(" in source[source.index("def forward(self, *inputs)") :]

        def refused(*args, **kwargs):
            raise AssertionError("the group was stored, then reduced")

        module._sum = module._mean = refused  # what _fused_sum's fallback reduces the stored group with

    _renders_the_reference(tmp_path, name, init, forward, inputs, {} if simd == "host" else {"simd": "avx2"}, patch)


def test_the_rendered_forward_calls_torch_only_to_view_allocate_and_copy(tmp_path):
    (case,) = [c for c in CASES if c[0] == "conv_bn_relu_pool"]
    path, module = _module(tmp_path, *case)
    _, _, spec = _spec(path, module)
    source = templates.render(spec, {}, "cpp")
    body = source.split("class ModelNew", 1)[1]
    assert "_convolution(" in body and "_max_pool(" in body
    assert "epilogue=(0, [(None, False)," in body  # batch norm and ReLU: finished by the convolution, in place
    assert "_batch_norm(" not in body and "_ew(" not in body and "_fused(" not in body
    assert "indices=False)" in body  # the pooling's indices are never read: not computed
    assert "torch.ops.aten.convolution" not in body and "F." not in body


def test_an_op_without_a_kernel_is_named(tmp_path):
    path, module = _module(tmp_path, "sort", "pass", "torch.sort(x, dim=1)[0]", "[torch.randn(4, 5)]")
    torch.manual_seed(0)
    with pytest.raises(Unsupported, match="no kernel for aten.sort"):
        trace_graph(module.Model().eval(), module.get_inputs())


def _graph_solution(problem_path, size, params, tmp_path):
    """(the recogniser's spec, the graph family's rendered file) for a problem file at `size`."""
    from agentkern.policies.builtin.recognize import analyze

    spec = analyze(str(problem_path), size)
    assert spec["family"] == "graph", spec["reason"]
    solution = tmp_path / f"{Path(problem_path).stem}_graph.py"
    solution.write_text(templates.render(spec, params, "cpp"))
    return spec, solution


# The dataset's graph-family problems (sum_middle_dim was one until the reduce template took a middle dim).
@pytest.mark.parametrize("problem", ["conv2d_bn_relu_pool"])
def test_the_datasets_graph_problems_pass_the_harness(tmp_path, problem):
    from support import ROOT, fast_options

    from agentkern.harness.evaluate import evaluate

    path = ROOT / "kernels_dataset" / "problems" / f"{problem}.py"
    _, solution = _graph_solution(path, "cpu", {"schedule": "static"}, tmp_path)
    result = evaluate(problem, solution, "cpu", fast_options(second_shape="off"))
    assert result.status == "ok" and result.correct, result.error
    assert result.details["candidate_ops"] and not set(result.details["candidate_ops"]) & {"convolution", "mm", "sum"}


SOFTMAX_THEN_POOL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return F.max_pool2d(torch.softmax(self.conv(x), dim=1), 2) + self.bias


batch, channels, size = 64, 64, 64
bias_shape = (channels, 1, 1)


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels]
"""


def test_a_kernel_reading_a_non_contiguous_intermediate_passes_the_harness_at_the_small_size(tmp_path):
    """softmax over the channels leaves a view the pooling kernel must copy: the copy must outlive the call (a
    temporary's memory went back to glibc, which wrote its bookkeeping into the first elements: 1 element wrong
    in the harness, none in-process). And --size small keeps `bias_shape` consistent with the halved channels."""
    from support import fast_options

    from agentkern.harness.evaluate import evaluate

    problem = tmp_path / "softmax_then_pool.py"
    problem.write_text(SOFTMAX_THEN_POOL)
    spec, solution = _graph_solution(problem, "small", {}, tmp_path)
    assert spec["input_shapes"][0][1] < 64  # halved
    for _ in range(2):
        result = evaluate(str(problem), solution, "cpu", fast_options(size="small", second_shape="off"))
        assert result.status == "ok" and result.correct, result.error
