# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled twins of ``read_message`` and ``watch_event`` in
asyncsched/backends/kube/protobuf.py (same answers, same errors).

Built into ``asyncsched._protowire`` by setup.py; imported only through that module,
which hands over its error class and its text of a time with ``configure``.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint64_t

cdef enum:  # the field kinds, as protobuf.py numbers them
    STRING = 0
    INT = 1
    BOOL = 2
    MESSAGE = 3
    INLINE = 4
    STRING_MAP = 5
    QUANTITY_MAP = 6
    QUANTITY = 7

cdef object _Error = ValueError
cdef object _time_text = None


def configure(error, time_text):
    """The error to raise on bad bytes, and seconds -> the JSON text of a metav1.Time."""
    global _Error, _time_text
    _Error = error
    _time_text = time_text


cdef inline Py_ssize_t _varint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                               uint64_t* out) except -1:
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef unsigned char byte
    while True:
        if pos >= end:
            raise _Error("the message ends inside a number")
        byte = buf[pos]
        pos += 1
        value |= (<uint64_t>(byte & 0x7F)) << shift
        if byte < 0x80:
            out[0] = value
            return pos
        shift += 7
        if shift > 63:
            raise _Error("a number longer than ten bytes")


cdef inline object _text(const unsigned char* buf, Py_ssize_t start, Py_ssize_t stop):
    return PyUnicode_DecodeUTF8(<const char*>buf + start, stop - start, "replace")


cdef Py_ssize_t _next(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t size,
                      uint64_t* number, uint64_t* value, Py_ssize_t* begin,
                      Py_ssize_t* end) except -1:
    """One field, as the twin's ``fields`` yields it: a number's value, or the span of
    bytes (an empty span at ``pos`` for a number); ``number`` 0 for a skipped fixed-size
    field. Returns where the next field starts."""
    cdef uint64_t tag, length
    cdef int wire
    pos = _varint(buf, pos, size, &tag)
    wire = tag & 7
    number[0] = tag >> 3
    value[0] = 0
    if wire == 2:
        pos = _varint(buf, pos, size, &length)
        if pos > stop or length > <uint64_t>(stop - pos):
            raise _Error("a field runs past the end of its message")
        begin[0] = pos
        end[0] = pos + length
        return pos + length
    if wire == 0:
        pos = _varint(buf, pos, size, value)
        begin[0] = pos
        end[0] = pos
        return pos
    number[0] = 0
    if wire == 1:
        return pos + 8
    if wire == 5:
        return pos + 4
    raise _Error(f"wire type {wire} is not one Kubernetes uses")


cdef object _quantity(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t size):
    """The string of a resource.Quantity message (field 1)."""
    cdef uint64_t number, value
    cdef Py_ssize_t begin, end
    while pos < stop:
        pos = _next(buf, pos, stop, size, &number, &value, &begin, &end)
        if number == 1:
            return _text(buf, begin, end)
    if pos != stop:
        raise _Error("a number runs past the end of its message")
    return "0"


cdef tuple _entry(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t stop,
                  Py_ssize_t size, bint quantity):
    cdef uint64_t number, value
    cdef Py_ssize_t begin, end
    key = ""
    text = ""
    while pos < stop:
        pos = _next(buf, pos, stop, size, &number, &value, &begin, &end)
        if number == 1:
            key = _text(buf, begin, end)
        elif number == 2:
            text = _quantity(buf, begin, end, size) if quantity else _text(buf, begin, end)
    if pos != stop:
        raise _Error("a number runs past the end of its message")
    return key, text


cdef object _time(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t size):
    cdef uint64_t number, value
    cdef uint64_t seconds = 0, nanos = 0
    cdef Py_ssize_t begin, end
    while pos < stop:
        pos = _next(buf, pos, stop, size, &number, &value, &begin, &end)
        if number == 1:
            seconds = value
        elif number == 2:
            nanos = value
    if pos != stop:
        raise _Error("a number runs past the end of its message")
    if seconds == 0 and nanos == 0:
        return None
    return _time_text(<long long>seconds)


cdef object _message(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t stop,
                     Py_ssize_t size, dict message, dict out):
    cdef uint64_t tag, value, length
    cdef Py_ssize_t begin
    cdef int wire, kind
    cdef tuple spec
    cdef object item, found
    while pos < stop:
        if buf[pos] < 0x80:
            tag = buf[pos]
            pos += 1
        else:
            pos = _varint(buf, pos, size, &tag)
        wire = tag & 7
        value = 0
        if wire == 2:
            if pos < size and buf[pos] < 0x80:
                length = buf[pos]
                pos += 1
            else:
                pos = _varint(buf, pos, size, &length)
            begin = pos
            if pos > stop or length > <uint64_t>(stop - pos):
                raise _Error("a field runs past the end of its message")
            pos += length
        elif wire == 0:
            pos = _varint(buf, pos, size, &value)
            begin = pos
        elif wire == 1:
            pos += 8
            continue
        elif wire == 5:
            pos += 4
            continue
        else:
            raise _Error(f"wire type {wire} is not one Kubernetes uses")
        found = message.get(<long>(tag >> 3))
        if found is None:
            continue
        spec = <tuple>found
        kind = spec[1]
        if kind == STRING:
            item = _text(buf, begin, pos)
        elif kind == MESSAGE:
            item = _message(buf, begin, pos, size, <dict>spec[2], {})
        elif kind == INT:
            item = <long long>value
        elif kind == BOOL:
            item = value != 0
        elif kind == STRING_MAP or kind == QUANTITY_MAP:
            key, text = _entry(buf, begin, pos, size, kind == QUANTITY_MAP)
            name = spec[0]
            mapping = out.get(name)
            if mapping is None:
                mapping = out[name] = {}
            mapping[key] = text
            continue
        elif kind == INLINE:
            _message(buf, begin, pos, size, <dict>spec[2], out)
            continue
        elif kind == QUANTITY:
            item = _quantity(buf, begin, pos, size)
        else:
            item = _time(buf, begin, pos, size)
            if item is None:
                continue
        if spec[3]:
            name = spec[0]
            listed = out.get(name)
            if listed is None:
                out[name] = [item]
            else:
                listed.append(item)
        elif item or spec[4] or kind == MESSAGE:
            out[spec[0]] = item
    if pos != stop:
        raise _Error("a number runs past the end of its message")
    return out


def read_message(bytes buf, Py_ssize_t start, Py_ssize_t stop, dict message, dict into=None):
    """The JSON-shaped dict of the message in ``buf[start:stop]``."""
    cdef Py_ssize_t size = len(buf)
    if start < 0 or stop > size or start > stop:
        raise _Error("a span outside the bytes")
    return _message(<const unsigned char*>buf, start, stop, size, message,
                    {} if into is None else into)


cdef tuple _unwrap(const unsigned char* buf, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t size):
    cdef uint64_t number, value
    cdef Py_ssize_t begin, end, pos
    if start + 4 > size or buf[start] != 0x6B or buf[start + 1] != 0x38 \
            or buf[start + 2] != 0x73 or buf[start + 3] != 0:  # b"k8s\x00"
        raise _Error("not a Kubernetes protobuf object (no k8s envelope)")
    pos = start + 4
    while pos < stop:
        pos = _next(buf, pos, stop, size, &number, &value, &begin, &end)
        if number == 2:  # runtime.Unknown's raw
            return begin, end
    if pos != stop:
        raise _Error("a number runs past the end of its message")
    return stop, stop


def watch_event(bytes frame):
    """The type of a watch frame's event and the span of its object (unwrapped)."""
    cdef const unsigned char* buf = <const unsigned char*>frame
    cdef Py_ssize_t size = len(frame)
    cdef Py_ssize_t pos = 0, inner_pos, begin, end, raw_begin, raw_end
    cdef uint64_t number, inner, value
    cdef object kind = ""
    cdef tuple span = (0, 0)
    while pos < size:
        pos = _next(buf, pos, size, size, &number, &value, &begin, &end)
        if number == 1:
            kind = _text(buf, begin, end)
        elif number == 2:
            inner_pos = begin
            while inner_pos < end:
                inner_pos = _next(buf, inner_pos, end, size, &inner, &value,
                                  &raw_begin, &raw_end)
                if inner == 1:
                    span = _unwrap(buf, raw_begin, raw_end, size)
            if inner_pos != end:
                raise _Error("a number runs past the end of its message")
    if pos != size:
        raise _Error("a number runs past the end of its message")
    return kind, span[0], span[1]
