"""REST API (Django REST framework): thin views over ``rolloutui.services``."""
