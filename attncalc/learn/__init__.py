"""What a learner does: walk the computation, check their own numbers, worksheets, compare."""
