"""Database migrations of the releases app: model versions, environments, targets and deployment revisions."""
