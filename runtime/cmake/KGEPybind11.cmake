# Finds pybind11 for the Python interpreter the build targets: the copy
# installed in that interpreter's environment (pip's pybind11 ships its
# CMake package), else a system one. Sets pybind11_FOUND. Shared by the
# runtime (which builds standalone) and the compiler's Python package.
macro(kge_find_pybind11)
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  if(Python3_FOUND AND NOT pybind11_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import pybind11; print(pybind11.get_cmake_dir())"
      OUTPUT_VARIABLE kge_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET)
    if(kge_pybind11_dir)
      set(pybind11_DIR ${kge_pybind11_dir})
    endif()
    find_package(pybind11 CONFIG QUIET)
  endif()
endmacro()
