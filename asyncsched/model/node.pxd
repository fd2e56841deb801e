# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# means what it means interpreted, but that a field never set reads None rather than
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree).
# The interpreter never reads this file.

from asyncsched.model.journal cimport Tracked

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
