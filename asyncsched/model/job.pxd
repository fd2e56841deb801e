# Compiled, this class is an extension type: its methods read and write its fields as C
# struct members. The fields are the .py's __slots__, each a Python object, so the class
# behaves as it does interpreted, except that a field never set reads None instead of
# raising AttributeError (tests/unit/test_compiled_modules.py checks the fields agree; ext/
# README.md, "The compiled core", says what typed methods change). The interpreter never
# reads this file.

cimport cython
from asyncsched.model.task cimport TaskInfo
from asyncsched.model.journal cimport Tracked

cdef class JobInfo(Tracked):
    cdef public object _allocated_before
    cdef public object allocated
    cdef public object books_memo
    cdef public object by_status
    cdef public object creation
    cdef public object min_available
    cdef public object min_resources
    cdef public object min_task_member
    cdef public object n_allocated
    cdef public object n_pending_best_effort
    cdef public object n_pending_gated
    cdef public object n_ready
    cdef public object name
    cdef public object namespace
    cdef public object network_topology
    cdef public object phase
    cdef public object podgroup
    cdef public object podgroup_in_sync
    cdef public object priority
    cdef public object priority_class
    cdef public object queue
    cdef public object settled_under
    cdef public object share_memo
    cdef public object tasks
    cdef public object uid

    cpdef touch(self)

    # A task's fields read as struct members (a None task raises AttributeError, as
    # interpreted: the build checks for None; anything but a TaskInfo is a TypeError).
    @cython.locals(task=TaskInfo)
    cpdef add_task(self, task)
    @cython.locals(task=TaskInfo, existing=TaskInfo)
    cpdef remove_task(self, task)
    # The task index and the status buckets are plain dicts: read and written as dicts.
    @cython.locals(task=TaskInfo, existing=TaskInfo, tasks=dict, by_status=dict, bucket=dict)
    cpdef update_task_status(self, task, status)
    @cython.locals(task=TaskInfo, by_status=dict, bucket=dict)
    cpdef _count_in(self, task)
    @cython.locals(existing=TaskInfo, bucket=dict)
    cpdef _count_out(self, existing)
    @cython.locals(twin=JobInfo)
    cpdef clone_empty(self, journal=*)
