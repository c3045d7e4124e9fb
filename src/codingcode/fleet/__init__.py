"""Fleets: many headless sessions, one per task of a task file, one result per task.

``tasks`` reads the task file, ``workcopy`` makes each task's fresh working copy and its
patch, ``attempt`` runs one task once (a ``codingcode run`` child process), ``results`` keeps
``DIR/results.jsonl`` and the task folders, ``engines`` runs attempts (local processes or a
Ray cluster), ``progress`` shows it, ``run`` puts it together.
"""
