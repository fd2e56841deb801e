# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# behaves as it does interpreted, except that a field never set reads None instead of
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree; ext/
# README.md, "The compiled core", says what typed methods change). The interpreter never
# reads this file.

cdef class Tracked:
    cdef public object journal
    cdef public object touched

    # A C call from the typed methods of the model (a method lookup interpreted).
    cpdef touch(self)
