"""The remote CLI: ``rolloutui`` (and ``kubectl rolloutui``) talks to a running server's REST API
with a token, from any machine. Pure Python on the standard library: it imports neither Django nor
the server's packages (an import-linter contract keeps it so), which keeps its start-up short."""
