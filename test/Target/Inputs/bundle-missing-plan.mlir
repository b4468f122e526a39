// A lowered module whose launch plan and other bundle attributes are gone.
module attributes {gpu.container_module} {
  gpu.module @f_kernels attributes {kge.signature = {name = "f", params = []}} {
    gpu.func @f() kernel {
      gpu.return
    }
  }
}
