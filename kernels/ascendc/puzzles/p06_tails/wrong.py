BUFFER_NUM = 2


def add_kernel(x, y, z, tiling):
    blockLength = tiling.blockLength
    tileLength = tiling.tileLength
    tileCount = blockLength // tileLength
    tail = blockLength % tileLength
    if GetBlockIdx() == GetBlockNum() - 1 and tail > 0:  # the tail is at the end of z
        tileCount += 1
    else:
        tail = tileLength
    offset = blockLength * GetBlockIdx()
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x + offset, blockLength)
    yGm.SetGlobalBuffer(y + offset, blockLength)
    zGm.SetGlobalBuffer(z + offset, blockLength)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, BUFFER_NUM)
    inQueueY = TQue(TPosition.VECIN, BUFFER_NUM)
    outQueueZ = TQue(TPosition.VECOUT, BUFFER_NUM)
    pipe.InitBuffer(inQueueX, BUFFER_NUM, tileLength * 2)
    pipe.InitBuffer(inQueueY, BUFFER_NUM, tileLength * 2)
    pipe.InitBuffer(outQueueZ, BUFFER_NUM, tileLength * 2)
    for i in range(tileCount):
        count = tileLength if i < tileCount - 1 else tail
        start = i * tileLength
        # CopyIn
        xLocal = inQueueX.AllocTensor(half)
        yLocal = inQueueY.AllocTensor(half)
        DataCopy(xLocal, xGm[start], count)
        DataCopy(yLocal, yGm[start], count)
        inQueueX.EnQue(xLocal)
        inQueueY.EnQue(yLocal)
        # Compute
        xLocal = inQueueX.DeQue(half)
        yLocal = inQueueY.DeQue(half)
        zLocal = outQueueZ.AllocTensor(half)
        Add(zLocal, xLocal, yLocal, count)
        outQueueZ.EnQue(zLocal)
        inQueueX.FreeTensor(xLocal)
        inQueueY.FreeTensor(yLocal)
        # CopyOut
        zLocal = outQueueZ.DeQue(half)
        DataCopy(zGm[start], zLocal, count)
        outQueueZ.FreeTensor(zLocal)
