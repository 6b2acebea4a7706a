"""Database migrations of the controller app: the simulated cluster's tables, progress samples, request records."""
