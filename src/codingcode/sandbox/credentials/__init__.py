"""Credentials a sandboxed command can use but never read (``sandbox.credentials``).

A masked credential reaches the command as a *placeholder* of the same shape as the real
value (an environment variable holding it, or a sentinel copy of a file with every secret
value swapped); the network proxy, terminating TLS for the credential's own hosts only,
puts the real value back on requests to those hosts (:mod:`.settings` the settings and
ready-made entries, :mod:`.placeholders` the placeholders, :mod:`.formats` the secrets of a
file found by format, :mod:`.broker` one session's credentials, read afresh per call).
"""
