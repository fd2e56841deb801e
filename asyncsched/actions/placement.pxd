# Compiled, Placement is an extension type: one is made for every task placed. Its fields
# are the .py's __slots__, each a Python object (tests/unit/test_compiled_modules.py checks
# the two agree). The interpreter never reads this file.

cdef class Placement:
    cdef public object fits_idle
    cdef public object index
    cdef public object node
    cdef public object score
