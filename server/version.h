#ifndef ATTNSERVE_SERVER_VERSION_H_
#define ATTNSERVE_SERVER_VERSION_H_

namespace attnserve {
inline constexpr char kVersion[] = "0.1.0";
}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_VERSION_H_
