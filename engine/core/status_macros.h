// RETURN_IF_ERROR / ASSIGN_OR_RETURN: the project's status propagation macros.
#ifndef ATTNSERVE_ENGINE_CORE_STATUS_MACROS_H_
#define ATTNSERVE_ENGINE_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ATTNSERVE_CONCAT_INNER_(a, b) a##b
#define ATTNSERVE_CONCAT_(a, b) ATTNSERVE_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::absl::Status attnserve_status_ = (expr);     \
    if (!attnserve_status_.ok()) return attnserve_status_; \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates a StatusOr expression; on error
// returns its status, else assigns (or declares) lhs from its value.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ATTNSERVE_ASSIGN_OR_RETURN_IMPL_(ATTNSERVE_CONCAT_(attnserve_statusor_, __LINE__), lhs, expr)

#define ATTNSERVE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                      \
  if (!statusor.ok()) return std::move(statusor).status();     \
  lhs = std::move(statusor).value()

#endif  // ATTNSERVE_ENGINE_CORE_STATUS_MACROS_H_
