# Compiled, these classes are extension types: find_node asks them once or more for every
# task placed, and their methods read their own fields (and typed locals, the other
# classes' fields) as C struct members. The fields are the .py's __slots__, each a Python
# object (tests/unit/test_compiled_modules.py checks the two agree). The interpreter never
# reads this file.

cimport cython

cdef class Blocked:
    cdef public object blocked
    cdef public object counts
    cdef public object failures
    cdef public object unblocked
    cdef public object unblocked_bytes

cdef class FitClass:
    cdef public object columns
    cdef public object future
    cdef public object future_bytes
    cdef public object now
    cdef public object now_bytes
    cdef public object request
    cdef public object sync

cdef class Best:
    cdef public object _trees
    cdef public object block
    cdef public object fit
    cdef public object scores
    cdef public object size

cdef class Failed:
    cdef public object block
    cdef public object epoch
    cdef public object errors
    cdef public object fit
    cdef public object table
    cdef public object version

cdef class ClassCache:
    cdef public object _columns
    cdef public object block
    cdef public object epoch
    cdef public object failed
    cdef public object fit
    cdef public object size
    cdef public object table
    cdef public object trees

    @cython.locals(fit=FitClass, block=Blocked, entry=Best)
    cpdef best(self, table, n, fit, block, pipeline, total)
    @cython.locals(found=Blocked)
    cpdef blocked(self, failures, n)
    @cython.locals(entry=FitClass)
    cpdef fits(self, table, n, request, columns)
