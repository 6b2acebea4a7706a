from django.urls import path

from . import pages

urlpatterns = [
    path("", pages.modelserving_list, name="home"),
    path("modelservings/<str:namespace>/<str:name>/", pages.modelserving_detail, name="modelserving-detail"),
]
