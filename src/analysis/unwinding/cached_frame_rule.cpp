#include "analysis/unwinding/cached_frame_rule.hpp"

#include <dwarf.h>

#include <algorithm>
#include <cstdlib>

namespace perfscope::unwind {

namespace {

bool expression_register_supported(Dwarf_Word reg) noexcept {
  return reg == x86_64_dwarf::rsp || reg == x86_64_dwarf::rbp ||
         reg == x86_64_dwarf::return_address;
}

// Whether evaluate_cfa_expression handles every operation of `ops`.
bool cfa_expression_supported(const Dwarf_Op* ops, std::size_t count) noexcept {
  if (count == 0 || count > CfaExpression::max_ops) return false;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint8_t atom = ops[i].atom;
    if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
      if (!expression_register_supported(atom - DW_OP_breg0)) return false;
      continue;
    }
    if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) continue;
    switch (atom) {
      case DW_OP_bregx:
        if (!expression_register_supported(ops[i].number)) return false;
        continue;
      case DW_OP_const1u:
      case DW_OP_const1s:
      case DW_OP_const2u:
      case DW_OP_const2s:
      case DW_OP_const4u:
      case DW_OP_const4s:
      case DW_OP_const8u:
      case DW_OP_const8s:
      case DW_OP_constu:
      case DW_OP_consts:
      case DW_OP_dup:
      case DW_OP_drop:
      case DW_OP_over:
      case DW_OP_swap:
      case DW_OP_plus:
      case DW_OP_plus_uconst:
      case DW_OP_minus:
      case DW_OP_mul:
      case DW_OP_and:
      case DW_OP_or:
      case DW_OP_xor:
      case DW_OP_shl:
      case DW_OP_shr:
      case DW_OP_shra:
      case DW_OP_neg:
      case DW_OP_not:
      case DW_OP_ge:
      case DW_OP_gt:
      case DW_OP_le:
      case DW_OP_lt:
      case DW_OP_eq:
      case DW_OP_ne: continue;
      default: return false;
    }
  }
  return true;
}

}  // namespace

bool evaluate_cfa_expression(const CfaExpression& expression, std::uint64_t rsp, std::uint64_t rbp,
                             bool rbp_known, std::uint64_t rip, std::uint64_t& cfa) noexcept {
  std::array<std::uint64_t, CfaExpression::max_ops> stack{};
  std::size_t depth = 0;
  auto push = [&](std::uint64_t value) {
    if (depth == stack.size()) return false;
    stack[depth++] = value;
    return true;
  };
  auto reg = [&](Dwarf_Word number, std::uint64_t& value) {
    if (number == x86_64_dwarf::rbp && !rbp_known) return false;
    value = number == x86_64_dwarf::rsp ? rsp : number == x86_64_dwarf::rbp ? rbp : rip;
    return true;
  };
  for (std::size_t i = 0; i < expression.count; ++i) {
    const Dwarf_Op& op = expression.ops[i];
    std::uint64_t value = 0;
    if (op.atom >= DW_OP_breg0 && op.atom <= DW_OP_breg31) {
      if (!reg(op.atom - DW_OP_breg0, value) || !push(value + op.number)) return false;
      continue;
    }
    if (op.atom >= DW_OP_lit0 && op.atom <= DW_OP_lit31) {
      if (!push(op.atom - DW_OP_lit0)) return false;
      continue;
    }
    switch (op.atom) {
      case DW_OP_bregx:
        if (!reg(op.number, value) || !push(value + op.number2)) return false;
        continue;
      case DW_OP_const1u:
      case DW_OP_const1s:
      case DW_OP_const2u:
      case DW_OP_const2s:
      case DW_OP_const4u:
      case DW_OP_const4s:
      case DW_OP_const8u:
      case DW_OP_const8s:
      case DW_OP_constu:
      case DW_OP_consts:
        if (!push(op.number)) return false;
        continue;
      case DW_OP_dup:
        if (depth == 0 || !push(stack[depth - 1])) return false;
        continue;
      case DW_OP_over:
        if (depth < 2 || !push(stack[depth - 2])) return false;
        continue;
      case DW_OP_drop:
        if (depth == 0) return false;
        --depth;
        continue;
      case DW_OP_swap:
        if (depth < 2) return false;
        std::swap(stack[depth - 1], stack[depth - 2]);
        continue;
      case DW_OP_plus_uconst:
        if (depth == 0) return false;
        stack[depth - 1] += op.number;
        continue;
      case DW_OP_neg:
        if (depth == 0) return false;
        stack[depth - 1] = 0 - stack[depth - 1];
        continue;
      case DW_OP_not:
        if (depth == 0) return false;
        stack[depth - 1] = ~stack[depth - 1];
        continue;
      default: break;
    }
    // The binary operations: the top of the stack is the second operand.
    if (depth < 2) return false;
    std::uint64_t b = stack[--depth];
    std::uint64_t& a = stack[depth - 1];
    auto sa = static_cast<std::int64_t>(a), sb = static_cast<std::int64_t>(b);
    switch (op.atom) {
      case DW_OP_plus: a += b; break;
      case DW_OP_minus: a -= b; break;
      case DW_OP_mul: a *= b; break;
      case DW_OP_and: a &= b; break;
      case DW_OP_or: a |= b; break;
      case DW_OP_xor: a ^= b; break;
      case DW_OP_shl: a = b >= 64 ? 0 : a << b; break;
      case DW_OP_shr: a = b >= 64 ? 0 : a >> b; break;
      case DW_OP_shra: a = static_cast<std::uint64_t>(sa >> (b >= 64 ? 63 : b)); break;
      case DW_OP_ge: a = sa >= sb; break;
      case DW_OP_gt: a = sa > sb; break;
      case DW_OP_le: a = sa <= sb; break;
      case DW_OP_lt: a = sa < sb; break;
      case DW_OP_eq: a = sa == sb; break;
      case DW_OP_ne: a = sa != sb; break;
      default: return false;
    }
  }
  if (depth == 0) return false;
  cfa = stack[depth - 1];
  return true;
}

namespace {

// `ops` as "the CFA plus `offset`", an address (`is_value` false) or the value itself.
bool cfa_relative(const Dwarf_Op* ops, std::size_t count, std::int64_t& offset,
                  bool& is_value) noexcept {
  if (count == 0 || ops[0].atom != DW_OP_call_frame_cfa) return false;
  std::size_t i = 1;
  offset = 0;
  if (i < count && ops[i].atom == DW_OP_plus_uconst) {
    offset = static_cast<std::int64_t>(ops[i].number);
    ++i;
  } else if (i + 1 < count && ops[i].atom == DW_OP_consts && ops[i + 1].atom == DW_OP_plus) {
    offset = static_cast<std::int64_t>(ops[i].number);
    i += 2;
  }
  is_value = i < count && ops[i].atom == DW_OP_stack_value;
  if (is_value) ++i;
  return i == count;
}

}  // namespace

CachedFrameRule rule_of_frame(Dwarf_Frame* frame, std::vector<CfaExpression>& expressions) {
  CachedFrameRule rule;
  Dwarf_Addr start = 0, end = 0;
  bool signal_frame = false;
  if (dwarf_frame_info(frame, &start, &end, &signal_frame) != x86_64_dwarf::return_address ||
      signal_frame) {
    return rule;
  }
  Dwarf_Op* ops = nullptr;
  std::size_t count = 0;
  if (dwarf_frame_cfa(frame, &ops, &count) != 0 || count == 0) return rule;
  if (count == 1 && ops[0].atom == DW_OP_bregx &&
      (ops[0].number == x86_64_dwarf::rsp || ops[0].number == x86_64_dwarf::rbp)) {
    rule.cfa_register = static_cast<std::uint8_t>(ops[0].number);
    rule.cfa_offset = static_cast<std::int64_t>(ops[0].number2);
  } else if (cfa_expression_supported(ops, count)) {
    CfaExpression expression;
    std::copy(ops, ops + count, expression.ops.begin());
    expression.count = count;
    rule.cfa_expression = static_cast<std::uint32_t>(expressions.size());
    expressions.push_back(expression);
  } else {
    return rule;
  }
  Dwarf_Op memory[3];
  bool is_value = false;
  std::int64_t offset = 0;
  // The caller's rsp must be the CFA itself (the psABI's default rule).
  if (dwarf_frame_register(frame, x86_64_dwarf::rsp, memory, &ops, &count) != 0 ||
      !cfa_relative(ops, count, offset, is_value) || !is_value || offset != 0) {
    return rule;
  }
  if (dwarf_frame_register(frame, x86_64_dwarf::rbp, memory, &ops, &count) != 0) return rule;
  if (count == 0) {
    rule.frame_pointer =
        ops == nullptr ? CachedFrameRule::Saved::same : CachedFrameRule::Saved::undefined;
  } else if (cfa_relative(ops, count, offset, is_value) && !is_value) {
    rule.frame_pointer = CachedFrameRule::Saved::at_cfa;
    rule.frame_pointer_offset = offset;
  } else {
    return rule;
  }
  if (dwarf_frame_register(frame, x86_64_dwarf::return_address, memory, &ops, &count) != 0) {
    return rule;
  }
  if (count == 0 && ops != nullptr) {
    rule.kind = CachedFrameRule::Kind::outermost;
  } else if (count != 0 && cfa_relative(ops, count, offset, is_value) && !is_value) {
    rule.kind = CachedFrameRule::Kind::walk;
    rule.return_address_offset = offset;
  }
  return rule;
}

const CachedFrameRule& CfiRules::rule_at(Dwarf_CFI* cfi, std::uint64_t pc) {
  std::uint32_t index = rule_of_pc_.find(pc, 0);
  if (index != detail::FlatIndexMap::absent) return rules_[index];
  CachedFrameRule rule;
  Dwarf_Frame* frame = nullptr;
  if (cfi && dwarf_cfi_addrframe(cfi, pc, &frame) == 0) {
    rule = rule_of_frame(frame, expressions_);
    std::free(frame);
  }
  rules_.push_back(rule);
  rule_of_pc_.insert(pc, 0, static_cast<std::uint32_t>(rules_.size() - 1));
  return rules_.back();
}

}  // namespace perfscope::unwind
