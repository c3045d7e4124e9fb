"""The approval pipeline: every tool call is decided here before it runs (SPEC A, R, M).

``pipeline`` runs the six layers; ``rules`` holds the nine preset rules and the user's rules;
``shell`` and ``paths`` let rules understand what a command or a path really means;
``hooks``, ``confirm`` and ``audit`` are the hook bus, the user's answer and the record.
Nothing here knows a UI or the tools package: a call is a name and a dict of arguments.
"""
