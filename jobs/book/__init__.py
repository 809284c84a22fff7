"""One book as the worker sees it: the job spec, the plan (sentences, seeds, checkpoint keys), the
Engine contract, sentence checkpoints and their size-capped cache, the job's result."""
