# Compiled, the scorer and its per-request caches are extension types: all_rows runs for
# every task placed, and reads their fields (its own, and its typed locals') as C struct
# members. The fields are the .py's __slots__, each a Python object (tests/unit/
# test_compiled_modules.py checks the two agree). The interpreter never reads this file.

cimport cython

cdef class _ResourceClass:
    cdef public object n
    cdef public object parameters
    cdef public object scores
    cdef public object sync
    cdef public object table
    cdef public object totals

cdef class _Total:
    cdef public object scores
    cdef public object sync

cdef class _Scorer:
    cdef public object _affinity_cache
    cdef public object _classes
    cdef public object _epoch
    cdef public object _taint_cache
    cdef public object affinity
    cdef public object balanced
    cdef public object labels
    cdef public object least
    cdef public object most
    cdef public object pod_rules
    cdef public object soft_tainted
    cdef public object ssn
    cdef public object taint

    @cython.locals(entry=_ResourceClass, found=_Total)
    cpdef all_rows(self, task)
    @cython.locals(entry=_ResourceClass)
    cpdef _synced_class(self, task)
