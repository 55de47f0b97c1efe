"""The command layer (issue 32): one module per command group, one function per command taking a typed,
validated request (a frozen dataclass whose fields declare the options once, ``commands.args``) and
returning a typed result. The CLI (``cli/``) parses flags into the request, calls, and renders; the web
(``web/``) validates a body into the same request, calls, and renders. Neither holds arithmetic, defaults
or call sequences of its own; nothing in the library imports this package (``tests/test_layout.py``)."""
