"""The grammar random programs are drawn from: shapes real CUDA programs have, with defects."""
