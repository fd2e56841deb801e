# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# behaves as it does interpreted, except that a field never set reads None instead of
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree; ext/
# README.md, "The compiled core", says what typed methods change). The interpreter never
# reads this file.

cimport cython

cdef class Resource:
    cdef public object _hash
    cdef public object _values


# + and - read both operands' amounts and make the answer as C structs.
@cython.locals(a=Resource, b=Resource)
cpdef Resource _sum(a, b)
@cython.locals(a=Resource, b=Resource, made=Resource)
cpdef Resource _merged(a, b, bint negate)
