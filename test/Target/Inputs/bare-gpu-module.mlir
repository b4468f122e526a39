// A gpu.module that kge-lower-to-gpu did not produce: no kge.signature.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
}
