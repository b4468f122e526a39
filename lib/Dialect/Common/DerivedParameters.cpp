//===- DerivedParameters.cpp - parameters a caller derives ----------------===//

#include "Dialect/Common/DerivedParameters.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::kge;

DerivedParameters::DerivedParameters(func::FuncOp f) : f(f) {
  for (unsigned n = 0; n < f.getNumArguments(); ++n)
    if (auto named = f.getArgAttrOfType<StringAttr>(n, "kge.param"))
      names.insert(named.getValue());
}

StringAttr DerivedParameters::nameOf(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &f.getBody().front())
    return {};
  return f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "kge.param");
}

Value DerivedParameters::add(Type type, StringRef base, StringRef prefix,
                             ArrayRef<NamedAttribute> derived, Location loc) {
  std::string name = base.str();
  if (names.contains(name))
    name = (prefix + "_" + base).str();
  for (unsigned n = 1; names.contains(name); ++n)
    name = (prefix + "_" + base + "_" + Twine(n)).str();
  names.insert(name);
  MLIRContext *ctx = f.getContext();
  Builder b(ctx);
  NamedAttrList attrs;
  attrs.append("kge.derived", DictionaryAttr::get(ctx, derived));
  attrs.append("kge.param", b.getStringAttr(name));
  unsigned index = f.getNumArguments();
  if (failed(f.insertArgument(index, type, DictionaryAttr::get(ctx, attrs), loc)))
    return {};
  return f.getArgument(index);
}
