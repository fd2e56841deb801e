# Compiled, the sums a session opens with run over dicts known to be dicts: each amount is
# read with PyDict_Next rather than through an iterator of (name, value) tuples. The
# interpreter never reads this file.

cimport cython

@cython.locals(values=dict)
cpdef _accumulate(dict into, amount)
