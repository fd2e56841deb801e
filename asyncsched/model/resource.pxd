# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# means what it means interpreted, but that a field never set reads None rather than
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree).
# The interpreter never reads this file.

cdef class Resource:
    cdef public object _hash
    cdef public object _values
