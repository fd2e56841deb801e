# Compiled, Statement and its log's _Operation are extension types; the per-pod steps read
# the task's, node's and operation's fields as struct members. Their fields are the .py's
# __slots__, each a Python object (tests/unit/test_compiled_modules.py checks the two
# agree); a None task or node raises AttributeError as interpreted, anything else but a
# TaskInfo or NodeInfo a TypeError. The interpreter never reads this file.

cimport cython
from asyncsched.model.node cimport NodeInfo
from asyncsched.model.task cimport TaskInfo

cdef class _Operation:
    cdef public object claim
    cdef public object node
    cdef public object nominate
    cdef public object op
    cdef public object preemptor
    cdef public object previous
    cdef public object reason
    cdef public object task

cdef class Statement:
    cdef public object operations
    cdef public object ssn

    @cython.locals(task=TaskInfo, node=NodeInfo)
    cpdef _move(self, task, node, status, place=*)
    @cython.locals(task=TaskInfo, node=NodeInfo)
    cpdef allocate(self, task, node)
    @cython.locals(task=TaskInfo, node=NodeInfo, op=_Operation)
    cpdef commit(self)
