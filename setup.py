"""Builds the optional Cython kernels in ext/ when Cython and a compiler are present.

Without them the package installs pure-Python and uses the NumPy twins of every kernel.
"""

from setuptools import setup

setup()
