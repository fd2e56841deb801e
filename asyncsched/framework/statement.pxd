# Compiled, Statement is an extension type whose per-pod steps read the task's and node's
# fields as struct members. Its fields are the .py's __slots__, each a Python object
# (tests/unit/test_compiled_modules.py checks the two agree); a None task or node raises
# AttributeError as interpreted, anything else but a TaskInfo or NodeInfo a TypeError.
# The interpreter never reads this file.

cimport cython
from asyncsched.model.node cimport NodeInfo
from asyncsched.model.task cimport TaskInfo

cdef class Statement:
    cdef public object operations
    cdef public object ssn

    @cython.locals(task=TaskInfo, node=NodeInfo)
    cpdef _move(self, task, node, status, place=*)
    @cython.locals(task=TaskInfo, node=NodeInfo)
    cpdef allocate(self, task, node)
    @cython.locals(task=TaskInfo, node=NodeInfo)
    cpdef commit(self)
