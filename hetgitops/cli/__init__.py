"""CLI stage: thin click commands -> `hetgitops.api` -> a reporting formatter -> an exit code.

No policy logic lives here: options are parsed, the library is called, and the result printed.
"""
