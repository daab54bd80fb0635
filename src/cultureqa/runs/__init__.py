"""Tracking and comparison: where a run's results go (MLflow) and how experiments are compared.

``tracking`` logs results into MLflow (``mlflow_runs``: parent and child runs, ``parent_summary``:
the headline on the parent and the sweep-level ``cultureqa/results`` experiment,
``tracking_server``: a lost server ends a stage with one line); ``compare``, ``exps`` and
``headline`` read DVC experiments' predictions and params into the terminal tables.
"""
