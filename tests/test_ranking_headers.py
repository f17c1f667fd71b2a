"""`.h` headers written in C++ are parsed as C++ (their classes and methods become definitions a
search finds by name); plain C headers stay C (a real repo, real Milvus Lite, the real `zg`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import indexed_repo, search_hits

FILES = {
    "include/geo/shapes.h": '''\
#pragma once

#include <cmath>

namespace geo {

class Circle {
 public:
  explicit Circle(double radius) : radius_(radius) {}

  double area() const {
    // the area of the circle
    double r = radius_;
    double value = M_PI * r * r;
    if (value < 0) {
      return 0;
    }
    return value;
  }

  double perimeter() const {
    // the perimeter of the circle
    double r = radius_;
    double value = 2 * M_PI * r;
    if (value < 0) {
      return 0;
    }
    return value;
  }

  double diameter() const {
    // the diameter of the circle
    double r = radius_;
    double value = 2 * r;
    if (value < 0) {
      return 0;
    }
    return value;
  }

  double inscribed_square_side() const {
    // the inscribed_square_side of the circle
    double r = radius_;
    double value = r * std::sqrt(2.0);
    if (value < 0) {
      return 0;
    }
    return value;
  }

  double sector_area_quarter() const {
    // the sector_area_quarter of the circle
    double r = radius_;
    double value = M_PI * r * r / 4;
    if (value < 0) {
      return 0;
    }
    return value;
  }

 private:
  double radius_;
};

}  // namespace geo
''',
    "include/ring_buffer.h": '''\
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
''',
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("headers"), FILES)


search = search_hits


def test_cpp_header_class_is_a_cpp_definition(repo):
    hit = search(repo, "Circle")[0]
    assert (hit["path"], hit["language"], hit["symbol"]) == ("include/geo/shapes.h", "cpp", "Circle")


def test_c_header_stays_c(repo):
    hits = [h for h in search(repo, "ring_buffer") if h["path"] == "include/ring_buffer.h"]
    assert hits and {h["language"] for h in hits} == {"c"}
