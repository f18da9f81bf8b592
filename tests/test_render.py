"""Rendered tables with colour off at a fixed width: what a learner sees, byte for byte."""

QKV_TABLE = """\
Q = H·Wq   [3×4]
        0      1      2      3
我  1.000  1.000  1.000  1.000
爱  0.426  1.770  0.426  1.770
你  0.965  0.792  0.965  0.792

K = H·Wk   [3×4]
        0      1      2      3
我  1.000  1.000  1.000  1.000
爱  1.770  0.426  1.770  0.426
你  0.792  0.965  0.792  0.965

V = H·Wv   [3×4]
        0      1      2      3
我  1.000  1.000  1.000  1.000
爱  0.841  1.540  0.010  2.000
你  1.909  0.584  0.020  1.000

Q[爱, 0] = 0.8415×0.5 + 1.5403×0 + 0.0100×0.5 + 2.0000×0 = 0.426
"""

SOFTMAX_CELL = """\
A[爱, 我] = e^2.19586 / (e^2.19586 + e^1.50721 + e^2.04466)
          = 8.9877 / (8.9877 + 4.5141 + 7.7265)
          = 8.988 / 21.228 = 0.423
"""


def test_qkv_table_snapshot(cli):
    assert cli("qkv", "--example", "woaini", "-f", "table", "--cell", "爱,0").stdout == QKV_TABLE


def test_softmax_cell_snapshot(cli):
    out = cli("softmax", "--example", "woaini", "-f", "table", "--cell", "爱,我").stdout
    assert out.endswith(SOFTMAX_CELL)


def test_no_escape_codes_with_no_color(cli):
    out = cli("softmax", "--example", "woaini", "-f", "table").stdout
    assert "\x1b[" not in out


def test_large_matrix_is_summarised_with_its_full_shape(cli):
    text = "; ".join(" ".join(str((i * 7 + j) % 11) for j in range(40)) for i in range(50))
    out = cli("softmax", "--scores", text, "-f", "table").stdout
    assert "[50×40]" in out and "…" in out and "⋮" in out
    assert len(out.splitlines()) < 20
    assert "A[" not in out  # no --work for 2,000 cells unless asked
