# Compiled, NodeTable is an extension type: placing a task looks up its request's vector and
# books it on a row, and both read the table's own fields as C struct members. The fields
# are the .py's __slots__, each a Python object (tests/unit/test_compiled_modules.py checks
# the two agree). The interpreter never reads this file.

cdef class NodeTable:
    cdef public object _books
    cdef public object _free_rows
    cdef public object _log
    cdef public object _log_base
    cdef public object _refresh_memo
    cdef public object _vector_cache
    cdef public object allocatable
    cdef public object dimensions
    cdef public object epoch
    cdef public object idle
    cdef public object index
    cdef public object pipelined
    cdef public object releasing
    cdef public object size

    # Called for every task booked: as C calls from callers that type the table.
    cpdef vector(self, resource, pods=*)
    cpdef book(self, row, vec, sign, status_kind)
