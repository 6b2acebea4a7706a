"""Database migrations of the dashboard app (rolloutui): access grants, the audit trail and preview jobs."""
