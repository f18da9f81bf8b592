"""Running a model: generation one token at a time, training steps, BLAS threads."""
