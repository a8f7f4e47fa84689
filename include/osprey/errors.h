// Osprey's exception hierarchy, mirroring TensorFlow's error classes (DESIGN.md §6).
#pragma once

#include <stdexcept>
#include <string>

namespace osprey {

/// Base class of every error Osprey throws. Messages say what was wrong, with the values, and what to do.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// An argument had an invalid value or shape (TensorFlow's InvalidArgumentError).
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};
/// Something that was asked for does not exist (TensorFlow's NotFoundError).
class NotFoundError : public Error {
 public:
  using Error::Error;
};
/// The system is not in a state where the operation can run (TensorFlow's FailedPreconditionError).
class FailedPreconditionError : public Error {
 public:
  using Error::Error;
};
/// A resource, usually device memory, ran out (TensorFlow's ResourceExhaustedError).
class ResourceExhaustedError : public Error {
 public:
  using Error::Error;
};
/// A service or device is not available right now (TensorFlow's UnavailableError).
class UnavailableError : public Error {
 public:
  using Error::Error;
};
/// An operation was aborted because another part of it failed, e.g. a replica waiting for one that threw
/// (TensorFlow's AbortedError).
class AbortedError : public Error {
 public:
  using Error::Error;
};
/// An operation did not complete in its time limit, e.g. a collective whose peers never arrived (TensorFlow's
/// DeadlineExceededError).
class DeadlineExceededError : public Error {
 public:
  using Error::Error;
};
/// An invariant of Osprey itself broke: a bug, please report it (TensorFlow's InternalError).
class InternalError : public Error {
 public:
  using Error::Error;
};
/// Raised where TensorFlow's Python API raises RuntimeError (e.g. configuration after initialisation).
class RuntimeError : public Error {
 public:
  using Error::Error;
};
/// Raised where TensorFlow/Keras's Python API raises ValueError (bad argument values, unknown names).
class ValueError : public Error {
 public:
  using Error::Error;
};
/// The process may not read or write a path (TensorFlow's PermissionDeniedError).
class PermissionDeniedError : public Error {
 public:
  using Error::Error;
};
/// Raised where Keras raises NotImplementedError (a model subclass without a call()).
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

}  // namespace osprey
