"""A sweep as a SLURM job array (docs/team.md, "A sweep on a SLURM cluster").

One command (``cultureqa slurm submit``) expands a sweep written as for ``dvc exp run --queue``
(``-S 'model=a,b' -S 'prompt=x,y'``) into experiments, and submits the ones not yet pushed as
one ``sbatch --array``: each task clones the team's git remote at the sweep's commit, runs its
one experiment there (the PostgreSQL response store and the MLflow server are shared through
the environment), and pushes it to the git remote and its outputs to the DVC remote. Another
(``cultureqa slurm collect``) pulls every pushed experiment and names, from SLURM's accounting,
why each missing one is missing; submitting again runs only those.

- :mod:`.sweep`: the experiments of a sweep, its saved state, and which are pushed;
- :mod:`.slurm`: ``sbatch``, ``squeue`` and the accounting (``sacct``, or the job completion
  file where the cluster keeps no accounting database);
- :mod:`.task`: what one array task runs;
- :mod:`.commands`: ``submit`` and ``collect`` as the command line runs them.
"""
