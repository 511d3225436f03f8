#pragma once

// Every parallel algorithm, as <algorithm> and <numeric> give std's.
#include "fjord/copy_if.hpp"
#include "fjord/count.hpp"
#include "fjord/execution.hpp"
#include "fjord/fill.hpp"
#include "fjord/find.hpp"
#include "fjord/for_each.hpp"
#include "fjord/minmax_element.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/ranges.hpp"
#include "fjord/reduce.hpp"
#include "fjord/scan.hpp"
#include "fjord/sort.hpp"
#include "fjord/transform.hpp"
