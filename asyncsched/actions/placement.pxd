# Compiled, Placement is an extension type: one is made for every task placed. Its fields
# are the .py's __slots__, each a Python object (tests/unit/test_compiled_modules.py checks
# the two agree). _find_node, run for every task placed, reads the fields of the task, the
# node table and the class caches through typed locals. The interpreter never reads this
# file.

cimport cython
from asyncsched.actions.class_cache cimport Blocked, ClassCache, FitClass
from asyncsched.model.node_table cimport NodeTable
from asyncsched.model.task cimport TaskInfo

cdef class Placement:
    cdef public object fits_idle
    cdef public object index
    cdef public object node
    cdef public object score

@cython.locals(task=TaskInfo, table=NodeTable, cache=ClassCache, fit=FitClass, block=Blocked)
cpdef _find_node(ssn, task, pipeline, resources, extra_failures)
