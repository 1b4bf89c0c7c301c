# find_package(trt_tui): the header-only trt_tui::monitor target (trt_tui/monitor.h).
#
#   find_package(trt_tui REQUIRED)   # with -Dtrt_tui_DIR=$(trt-tui cpp --cmakedir)
#   target_link_libraries(prog PRIVATE trt_tui::monitor)
#
# TensorRT's own headers and libraries are the project's to find, as for any TensorRT program.
get_filename_component(_trt_tui_include "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
if(NOT TARGET trt_tui::monitor)
  find_package(Threads REQUIRED)
  add_library(trt_tui::monitor INTERFACE IMPORTED)
  set_target_properties(trt_tui::monitor PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_trt_tui_include}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}"
    INTERFACE_COMPILE_FEATURES cxx_std_17)
endif()
set(trt_tui_INCLUDE_DIRS "${_trt_tui_include}")
set(trt_tui_FOUND TRUE)
unset(_trt_tui_include)
