"""lessonweaver: find where agents went wrong in their traces and weave it into lessons."""

__version__ = "0.1.0"
