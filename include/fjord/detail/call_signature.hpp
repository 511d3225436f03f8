#pragma once

#include <cstddef>
#include <functional>
#include <type_traits>

namespace fjord::detail {

template <class... P>
struct parameter_list {};

// The parameters of a callable with exactly one call signature: a pointer to
// a function, or a class with one non-template operator() (a lambda).
// Overloaded and generic callables have none (`known` is false).
template <class F>
struct call_signature {
  static constexpr bool known = false;
};
template <class... P>
struct known_signature {
  static constexpr bool known = true;
  using parameters = parameter_list<P...>;
};
template <class M>
struct member_call_signature {
  static constexpr bool known = false;
};
template <class R, class C, class... P>
struct member_call_signature<R (C::*)(P...)> : known_signature<P...> {};
template <class R, class C, class... P>
struct member_call_signature<R (C::*)(P...) const> : known_signature<P...> {};
template <class R, class C, class... P>
struct member_call_signature<R (C::*)(P...) noexcept> : known_signature<P...> {};
template <class R, class C, class... P>
struct member_call_signature<R (C::*)(P...) const noexcept> : known_signature<P...> {};
template <class R, class... P>
struct call_signature<R (*)(P...)> : known_signature<P...> {};
template <class R, class... P>
struct call_signature<R (*)(P...) noexcept> : known_signature<P...> {};
template <class F>
requires requires {
  &F::operator();
}
struct call_signature<F> : member_call_signature<decltype(&F::operator())> {};

template <class T>
inline constexpr bool is_reference_wrapper_v = false;
template <class T>
inline constexpr bool is_reference_wrapper_v<std::reference_wrapper<T>> = true;

// Whether every parameter stays valid after the call that made a coroutine
// returns, when called with arguments of types Args: a parameter taken by
// value lives in the coroutine's frame, and one taken by reference is safe
// only when its argument is a std::ref (the caller keeps that object).
template <class Parameters, class... Args>
inline constexpr bool parameters_outlive_the_call = false;
template <class... P, class... Args>
requires(sizeof...(P) == sizeof...(Args)) inline constexpr bool parameters_outlive_the_call<
    parameter_list<P...>, Args...> = ((!std::is_reference_v<P> ||
                                       is_reference_wrapper_v<std::decay_t<Args>>)&&...);

// Whether go(f, args...) may start the coroutine f(args...) itself as the
// process, with no root frame to own f and the arguments: f holds no state
// (a function, or a class without members, such as a lambda that captures
// nothing, whose frame's reference to it is then never used) and its
// parameters outlive the call.
template <class F, class... Args>
consteval bool process_needs_no_root() {
  using fn = std::decay_t<F>;
  constexpr bool stateless = std::is_pointer_v<fn> || (std::is_class_v<fn> && std::is_empty_v<fn>);
  if constexpr (stateless && call_signature<fn>::known) {
    return parameters_outlive_the_call<typename call_signature<fn>::parameters, Args...>;
  } else {
    return false;
  }
}

}  // namespace fjord::detail
