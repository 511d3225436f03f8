#pragma once

// std::chrono's clocks, durations and literals: all fjord's headers use of
// it. libstdc++ 11 and later keep those in <bits/chrono.h>; its <chrono> adds
// the C++20 calendar and formatting, and with them <sstream> and <locale>,
// which made a fifth of the compile time of <fjord/join.hpp> (#11: <chrono>
// adds 0.13 s to a file that already includes <atomic>). Other standard
// libraries get <chrono>.
#if __has_include(<bits/chrono.h>)
#include <bits/chrono.h>  // IWYU pragma: export
#else
#include <chrono>  // IWYU pragma: export
#endif
