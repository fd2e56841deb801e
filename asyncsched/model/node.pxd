# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# behaves as it does interpreted, except that a field never set reads None instead of
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree; ext/
# README.md, "The compiled core", says what typed methods change). The interpreter never
# reads this file.

cimport cython
from asyncsched.model.task cimport TaskInfo
from asyncsched.model.journal cimport Tracked
from asyncsched.model.node_table cimport NodeTable

cdef class NodeInfo(Tracked):
    cdef public object gpu_use
    cdef public object gpus
    cdef public object labels
    cdef public object max_pods
    cdef public object name
    cdef public object node
    cdef public object ready
    cdef public object row
    cdef public object table
    cdef public object taints
    cdef public object tasks
    cdef public object unschedulable

    # A task's fields read as struct members (as in job.pxd).
    @cython.locals(task=TaskInfo, table=NodeTable)
    cpdef add_task(self, task)
    @cython.locals(task=TaskInfo)
    cpdef _book_gpus(self, task)
    @cython.locals(task=TaskInfo, booked=TaskInfo, table=NodeTable)
    cpdef remove_task(self, task)
    @cython.locals(task=TaskInfo)
    cpdef requeue(self, task)
    @cython.locals(twin=NodeInfo)
    cpdef rebound(self, table, row, journal=*)
    @cython.locals(source=NodeInfo)
    cpdef reset_from(self, source, table, row)
