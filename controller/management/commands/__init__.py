"""The ``simulate`` and ``load_demo`` commands (``manage.py simulate``, ``manage.py load_demo``)."""
