#pragma once

// std::reference_wrapper, which join and invoke return for a closure that
// returns a reference. libstdc++ keeps it in <bits/refwrap.h>; its
// <functional> adds the C++17 searchers and with them <unordered_map> and
// <vector>, a tenth of <fjord/join.hpp>'s compile time (#11). Other standard
// libraries get <functional>.
#if __has_include(<bits/refwrap.h>)
#include <bits/refwrap.h>  // IWYU pragma: export
#else
#include <functional>  // IWYU pragma: export
#endif
