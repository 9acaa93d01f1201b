"""The explorer's version, in one place: the package metadata (pyproject.toml reads it),
``ascend-explorer --version``, the app's footer and every report show this string.

0.21: the project's issues are numbered, and this is the release of issue 21 (the first one
that installs as a package); no earlier version was published.
"""
__version__ = "0.21.0"
