def copy_kernel(x, y, tiling):
    length = tiling.length
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, length)
    yGm.SetGlobalBuffer(y, length)
    pipe = TPipe()
    inQueue = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(inQueue, 1, length * 2)
    # TODO: AllocTensor, DataCopy x -> UB, EnQue; DeQue, DataCopy UB -> y, FreeTensor
