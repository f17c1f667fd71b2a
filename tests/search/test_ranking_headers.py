"""`.h` headers written in C++ are parsed as C++ (their classes and methods become definitions a
search finds by name); plain C headers stay C (a real repo, real Milvus Lite, the real `zg`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import indexed_repo, search_hits

# Circle's methods, all of one shape: (name, formula of the value it returns)
CIRCLE_METHODS = (
    ("area", "M_PI * r * r"),
    ("perimeter", "2 * M_PI * r"),
    ("diameter", "2 * r"),
    ("inscribed_square_side", "r * std::sqrt(2.0)"),
    ("sector_area_quarter", "M_PI * r * r / 4"),
)


def circle_method(name: str, formula: str) -> str:
    """One `double NAME() const` method of Circle returning FORMULA."""
    return (
        f"  double {name}() const {{\n    // the {name} of the circle\n    double r = radius_;\n"
        f"    double value = {formula};\n    if (value < 0) {{\n      return 0;\n    }}\n"
        "    return value;\n  }\n\n"
    )


FILES = {
    "include/geo/shapes.h": """\
#pragma once

#include <cmath>

namespace geo {

class Circle {
 public:
  explicit Circle(double radius) : radius_(radius) {}

"""
    + "".join(circle_method(*m) for m in CIRCLE_METHODS)
    + """ private:
  double radius_;
};

}  // namespace geo
""",
    "include/ring_buffer.h": """\
#ifndef RING_BUFFER_H
#define RING_BUFFER_H

#include <stddef.h>

struct ring_buffer {
  char *data;
  size_t capacity;
  size_t head;
  size_t tail;
};

int ring_buffer_push(struct ring_buffer *rb, char byte);
int ring_buffer_pop(struct ring_buffer *rb, char *out);

#endif
""",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("headers"), FILES)


search = search_hits


def test_cpp_header_class_is_a_cpp_definition(repo):
    hit = search(repo, "Circle")[0]
    assert (hit["path"], hit["language"], hit["symbol"]) == (
        "include/geo/shapes.h",
        "cpp",
        "Circle",
    )


def test_c_header_stays_c(repo):
    hits = [h for h in search(repo, "ring_buffer") if h["path"] == "include/ring_buffer.h"]
    assert hits and {h["language"] for h in hits} == {"c"}
