# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# behaves as it does interpreted, except that a field never set reads None instead of
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree; ext/
# README.md, "The compiled core", says what typed methods change). The interpreter never
# reads this file.

cimport cython
from asyncsched.model.journal cimport Tracked

cdef class TaskInfo(Tracked):
    cdef public object best_effort
    cdef public object creation
    cdef public object gpu_claim
    cdef public object gpu_request
    cdef public object index
    cdef public object init_resreq
    cdef public object job
    cdef public object name
    cdef public object namespace
    cdef public object node_name
    cdef public object pod
    cdef public object preemptable
    cdef public object priority
    cdef public object resreq
    cdef public object role
    cdef public object status
    cdef public object uid

    # The setters every placement calls: C calls from typed code.
    cpdef set_status(self, value)
    cpdef set_gpu_claim(self, claim)
    cpdef set_node(self, name)

    # The snapshot's copies, field by field.
    @cython.locals(twin=TaskInfo)
    cpdef clone(self, journal=*)
    @cython.locals(source=TaskInfo)
    cpdef reset_from(self, source)
